"""SAML 2.0 sign-in (pysaml2, with the ``xmlsec1`` binary): this installation is a service
provider (SP) of one identity provider (IdP) whose metadata is a local file.

An assertion signs someone in only when it is signed by the IdP's key (``want_assertions_signed``;
an unsigned or badly signed one is refused), names this SP as its audience (an assertion without
an audience restriction is refused too), is addressed to our assertion consumer URL
(recipient), is within its validity window give or take ``SAML_CLOCK_SKEW_SECONDS``, answers a
request we sent (IdP-initiated answers only with ``SAML_ALLOW_IDP_INITIATED``), and was never
used before (its id is kept until it expires: :class:`~workbench.models.SamlAssertion`). Roles
come from ``SAML_ROLE_ATTRIBUTE`` through ``SAML_ROLE_MAP`` and the OIDC sign-in's one home,
:func:`workbench.services.accounts.sign_in_with_provider` (refusals there revoke the person's
tokens and end their sessions). Every refusal is audited (``login_failed`` with a reason)."""

import base64
import datetime as dt
import functools

import defusedxml.ElementTree as SafeET
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.client import Saml2Client
from saml2.config import SPConfig
from saml2.metadata import entity_descriptor
from saml2.response import (
    IncorrectlySigned,
    StatusError,
    UnsolicitedResponse,
    VerificationError,
)
from saml2.saml import NameID
from saml2.sigver import SignatureError
from saml2.validate import ResponseLifetimeExceed, ToEarly

from workbench.models import OidcIdentity, SamlAssertion, SamlRequest
from workbench.roles import (
    mapped_project_slugs,
    parse_role_map,
    project_roles_from_claims,
    role_from_claims,
)
from workbench.services.accounts import SignInRefused, sign_in_with_provider
from workbench.services.audit import record_event
from workbench.services.identity import end_sessions

# An SP-initiated request older than this is not answered any more.
REQUEST_LIFETIME = dt.timedelta(minutes=10)
PROTOCOL = "urn:oasis:names:tc:SAML:2.0:protocol"
ASSERTION = "urn:oasis:names:tc:SAML:2.0:assertion"

# Attribute names IdPs use for the profile fields (Entra ID sends the long claim URIs).
_ATTRIBUTES = {
    "email": (
        "email",
        "mail",
        "emailaddress",
        "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
    ),
    "preferred_username": (
        "username",
        "uid",
        "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name",
    ),
    "given_name": (
        "givenName",
        "given_name",
        "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname",
    ),
    "family_name": (
        "sn",
        "surname",
        "family_name",
        "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname",
    ),
}


class SamlRefused(Exception):
    """A SAML answer that signs nobody in: ``reason`` (signature, audience, recipient, clock,
    replay, unsolicited, malformed, no_role, inactive, configuration) and ``status``."""

    def __init__(self, reason: str, message: str, status: int = 400):
        super().__init__(message)
        self.reason = reason
        self.status = status


def base_url() -> str:
    return settings.SAML_SP_BASE_URL.rstrip("/")


@functools.lru_cache(maxsize=4)
def _config(base, metadata_file, key_file, cert_file, idp_initiated, skew, xmlsec) -> SPConfig:
    signing = bool(key_file and cert_file)
    conf = {
        "entityid": f"{base}/saml/metadata/",
        "xmlsec_binary": xmlsec,
        "metadata": {"local": [metadata_file]} if metadata_file else {},
        "accepted_time_diff": skew,
        "allow_unknown_attributes": True,
        "service": {
            "sp": {
                "name": "Goldset Workbench",
                "endpoints": {
                    "assertion_consumer_service": [(f"{base}/saml/acs/", BINDING_HTTP_POST)],
                    "single_logout_service": [(f"{base}/saml/sls/", BINDING_HTTP_REDIRECT)],
                },
                "want_assertions_signed": True,
                "want_response_signed": False,
                "allow_unsolicited": idp_initiated,
                "authn_requests_signed": signing,
                "logout_requests_signed": signing,
            }
        },
    }
    if signing:
        conf["key_file"], conf["cert_file"] = key_file, cert_file
        conf["encryption_keypairs"] = [{"key_file": key_file, "cert_file": cert_file}]
    config = SPConfig()
    config.load(conf)
    return config


def sp_config() -> SPConfig:
    """The SP's pysaml2 configuration from the settings (cached per settings)."""
    return _config(
        base_url(),
        settings.SAML_IDP_METADATA_FILE,
        settings.SAML_SP_KEY_FILE,
        settings.SAML_SP_CERT_FILE,
        settings.SAML_ALLOW_IDP_INITIATED,
        settings.SAML_CLOCK_SKEW_SECONDS,
        settings.SAML_XMLSEC_BINARY,
    )


def client() -> Saml2Client:
    return Saml2Client(config=sp_config())


def idp_entity_id(saml: Saml2Client) -> str:
    """The one IdP of the metadata file (configuration error otherwise)."""
    idps = list(saml.metadata.identity_providers())
    if len(idps) != 1:
        raise SamlRefused("configuration", f"the IdP metadata names {len(idps)} IdPs, not one")
    return idps[0]


def sp_metadata() -> str:
    """This SP's metadata XML (entity id, ACS and SLS URLs, signing certificate)."""
    return str(entity_descriptor(sp_config()))


@transaction.atomic
def start_sign_in(*, relay_state: str) -> str:
    """An SP-initiated sign-in: the IdP URL (HTTP-Redirect binding) to send the browser to; the
    request's id is kept (:class:`SamlRequest`) until the answer consumes it."""
    saml = client()
    request_id, info = saml.prepare_for_authenticate(
        entityid=idp_entity_id(saml), relay_state=relay_state, binding=BINDING_HTTP_REDIRECT
    )
    SamlRequest.objects.filter(created_at__lt=timezone.now() - REQUEST_LIFETIME).delete()
    SamlRequest.objects.create(request_id=request_id, relay_state=relay_state[:500])
    return dict(info["headers"])["Location"]


def _envelope(raw: str) -> tuple[str, str]:
    """The InResponseTo and Destination of a posted SAMLResponse (read before verification:
    the id finds the request we sent, the destination must be our ACS; pysaml2 then verifies
    the signed assertion, its subject confirmation's recipient included)."""
    try:
        root = SafeET.fromstring(base64.b64decode(raw, validate=False))
    except Exception as exc:  # any undecodable answer is malformed
        raise SamlRefused("malformed", "the SAMLResponse is not base64-encoded XML") from exc
    if root.tag != f"{{{PROTOCOL}}}Response":
        raise SamlRefused("malformed", "the SAMLResponse is not a SAML Response")
    _check_window(root)
    return root.get("InResponseTo", ""), root.get("Destination", "")


def _check_window(root) -> None:
    """Refuse assertions outside their validity window give or take the clock skew allowance
    (read before verification, so only ever a refusal; pysaml2 checks the signed values again
    but names no reason)."""
    skew = dt.timedelta(seconds=settings.SAML_CLOCK_SKEW_SECONDS)
    now = timezone.now()
    for conditions in root.iter(f"{{{ASSERTION}}}Conditions"):
        before, after = conditions.get("NotBefore"), conditions.get("NotOnOrAfter")
        try:
            if after and dt.datetime.fromisoformat(after.replace("Z", "+00:00")) + skew <= now:
                raise SamlRefused(
                    "clock", "the assertion expired (beyond the clock skew allowance)"
                )
            if before and dt.datetime.fromisoformat(before.replace("Z", "+00:00")) - skew > now:
                raise SamlRefused("clock", "the assertion is not valid yet (clock skew)")
        except ValueError as exc:
            raise SamlRefused("malformed", "the assertion's validity times are malformed") from exc


def _claims(identity: dict, name_id: str) -> dict:
    claims: dict = {name: values for name, values in identity.items()}
    for field, names in _ATTRIBUTES.items():
        value = next((identity[n][0] for n in names if identity.get(n)), None)
        if isinstance(value, str):
            claims[field] = value
    claims.setdefault("preferred_username", name_id)
    return claims


def _classify(exc: Exception) -> tuple[str, str]:
    text = str(exc)
    if isinstance(exc, SignatureError | IncorrectlySigned) or "ignature" in text:
        return "signature", "the assertion is not signed by the identity provider's key"
    if isinstance(exc, UnsolicitedResponse):
        return "unsolicited", "this answer does not answer a sign-in started here"
    if isinstance(exc, ResponseLifetimeExceed | ToEarly) or "lifetime" in text.lower():
        return "clock", "the assertion is outside its validity window (clock skew)"
    if "AudienceRestriction" in text:
        return "audience", "the assertion is addressed to another service"
    if isinstance(exc, VerificationError) or "recipient" in text.lower():
        return "recipient", "the assertion is addressed to another URL"
    if isinstance(exc, StatusError):
        return "provider_error", f"the identity provider refused: {type(exc).__name__}"
    return "malformed", f"the answer could not be verified ({type(exc).__name__})"


def finish_sign_in(*, raw: str, address: str = "") -> tuple:
    """Verify a posted SAMLResponse and sign its subject in: returns ``(user, relay_state,
    session_info)``. Raises :class:`SamlRefused` (audited) for anything that does not hold."""
    try:
        return _finish_sign_in(raw=raw)
    except SamlRefused as exc:
        if exc.reason not in ("no_role", "inactive"):  # the account service audits those
            record_event(
                actor=None,
                verb="login_failed",
                detail={
                    "method": "saml",
                    "provider": settings.SAML_PROVIDER_NAME,
                    "reason": exc.reason,
                    "message": str(exc)[:500],
                    **({"address": address} if address else {}),
                },
            )
        raise


def _finish_sign_in(*, raw: str) -> tuple:
    if not raw:
        raise SamlRefused("malformed", "no SAMLResponse was posted")
    in_response_to, destination = _envelope(raw)
    if destination and destination != f"{base_url()}/saml/acs/":
        raise SamlRefused("recipient", "the answer is addressed to another URL")
    outstanding = {}
    if in_response_to:
        fresh = timezone.now() - REQUEST_LIFETIME
        with transaction.atomic():
            waiting = (
                SamlRequest.objects.select_for_update()
                .filter(request_id=in_response_to, created_at__gte=fresh)
                .first()
            )
            if waiting is not None:
                outstanding[waiting.request_id] = waiting.relay_state
                waiting.delete()  # one answer per request: a replay finds nothing
    saml = client()
    try:
        response = saml.parse_authn_request_response(raw, BINDING_HTTP_POST, outstanding)
    except Exception as exc:  # pysaml2 raises many types; each is classified
        reason, message = _classify(exc)
        raise SamlRefused(reason, message) from exc
    if response is None or response.assertion is None:
        raise SamlRefused("malformed", "the answer carries no assertion")
    assertion = response.assertion
    conditions = assertion.conditions
    if conditions is None or not conditions.audience_restriction:
        raise SamlRefused("audience", "the assertion names no audience")
    if not assertion.signature and not response.response.signature:
        raise SamlRefused("signature", "the assertion is not signed")
    issuer = response.issuer()
    if issuer != idp_entity_id(saml):
        raise SamlRefused("signature", "the assertion comes from another identity provider")
    name_id = response.name_id.text.strip() if response.name_id is not None else ""
    if not name_id:
        raise SamlRefused("malformed", "the assertion names no subject")
    _remember_assertion(assertion.id, issuer=issuer, not_on_or_after=response.not_on_or_after)
    user = _sign_in(issuer=issuer, name_id=name_id, identity=response.get_identity())
    relay_state = outstanding.get(in_response_to, "")
    session_info = {
        "issuer": issuer,
        "name_id": name_id,
        "name_id_format": response.name_id.format or "",
        "session_index": (
            assertion.authn_statement[0].session_index if assertion.authn_statement else ""
        )
        or "",
    }
    return user, relay_state, session_info


@transaction.atomic
def _remember_assertion(assertion_id: str, *, issuer: str, not_on_or_after) -> None:
    now = timezone.now()
    SamlAssertion.objects.filter(expires_at__lt=now).delete()
    skew = dt.timedelta(seconds=settings.SAML_CLOCK_SKEW_SECONDS)
    if not_on_or_after:
        expires = dt.datetime.fromtimestamp(int(not_on_or_after), tz=dt.UTC) + skew
    else:
        expires = now + dt.timedelta(hours=24)
    try:
        with transaction.atomic():
            SamlAssertion.objects.create(
                assertion_id=assertion_id[:255], issuer=issuer[:255], expires_at=max(expires, now)
            )
    except IntegrityError as exc:
        raise SamlRefused("replay", "this assertion was already used to sign in") from exc


def _sign_in(*, issuer: str, name_id: str, identity: dict):
    try:
        role_map = parse_role_map(settings.SAML_ROLE_MAP)
    except ValueError as exc:
        raise SamlRefused("configuration", str(exc).replace("OIDC_", "SAML_")) from exc
    claims = _claims(identity, name_id)
    attribute = settings.SAML_ROLE_ATTRIBUTE
    values = [v for v in claims.get(attribute, []) if isinstance(v, str)]
    try:
        return sign_in_with_provider(
            issuer=issuer,
            subject=name_id,
            claims=claims,
            role=role_from_claims(claims, claim=attribute, role_map=role_map),
            provider=settings.SAML_PROVIDER_NAME,
            values=values,
            project_roles=project_roles_from_claims(claims, claim=attribute, role_map=role_map),
            mapped_projects=mapped_project_slugs(role_map),
            method="saml",
        )
    except SignInRefused as exc:
        message = (
            "this account is deactivated in the workbench"
            if exc.reason == "inactive"
            else f"no value of the {attribute!r} attribute gives a role here"
        )
        raise SamlRefused(exc.reason, message, status=403) from exc


# ---------------------------------------------------------------- single logout


def start_logout(*, session_info: dict) -> str | None:
    """The IdP URL that ends the person's session there too (a LogoutRequest, HTTP-Redirect),
    or None when the IdP has no logout endpoint or the session was not a SAML one."""
    if not session_info.get("name_id"):
        return None
    saml = client()
    idp = idp_entity_id(saml)
    services = saml.metadata.single_logout_service(idp, BINDING_HTTP_REDIRECT, "idpsso")
    if not services:
        return None
    destination = services[0]["location"]
    name_id = NameID(
        text=session_info["name_id"], format=session_info.get("name_id_format") or None
    )
    indexes = [session_info["session_index"]] if session_info.get("session_index") else None
    _, request = saml.create_logout_request(
        destination, idp, name_id=name_id, session_indexes=indexes, sign=False
    )
    signing = bool(settings.SAML_SP_KEY_FILE and settings.SAML_SP_CERT_FILE)
    http = saml.apply_binding(
        BINDING_HTTP_REDIRECT, str(request), destination, relay_state="", sign=signing
    )
    return dict(http["headers"])["Location"]


def handle_logout_request(*, raw: str, relay_state: str, sigalg: str, signature: str) -> str:
    """An IdP-initiated logout (HTTP-Redirect, signed by the IdP: an unsigned one is refused):
    ends every session of the person it names; returns the URL of our LogoutResponse."""
    if not signature or not sigalg:
        raise SamlRefused("signature", "a logout request must be signed")
    saml = client()
    try:
        request = saml.parse_logout_request(
            raw, BINDING_HTTP_REDIRECT, relay_state=relay_state, sigalg=sigalg, signature=signature
        )
    except Exception as exc:  # classified like a sign-in answer
        reason, message = _classify(exc)
        raise SamlRefused(reason, message) from exc
    if request is None:
        raise SamlRefused("signature", "the logout request could not be verified")
    message = request.message
    issuer = message.issuer.text.strip() if message.issuer is not None else ""
    if issuer != idp_entity_id(saml):
        raise SamlRefused("signature", "the logout request comes from another identity provider")
    subject = message.name_id.text.strip() if message.name_id is not None else ""
    identity = (
        OidcIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    )
    if identity is not None:
        end_sessions(user=identity.user, reason="saml_logout")
    response = saml.create_logout_response(message, [BINDING_HTTP_REDIRECT])
    destination = saml.metadata.single_logout_service(issuer, BINDING_HTTP_REDIRECT, "idpsso")[0][
        "location"
    ]
    http = saml.apply_binding(
        BINDING_HTTP_REDIRECT, str(response), destination, relay_state=relay_state, response=True
    )
    return dict(http["headers"])["Location"]


def handle_logout_response(*, raw: str) -> None:
    """The IdP's answer to our logout: checked, then nothing to do (we ended ours first)."""
    saml = client()
    try:
        saml.parse_logout_request_response(raw, BINDING_HTTP_REDIRECT)
    except Exception as exc:  # classified like a sign-in answer
        reason, message = _classify(exc)
        raise SamlRefused(reason, message) from exc
