"""A real SAML 2.0 identity provider for the tests: pysaml2's IdP (``saml2.server.Server``) with
keys and self-signed certificates generated at test time (nothing fetched). It parses the SP's
real AuthnRequest and answers with a real signed Response; options make the answers the tests
must see refused: forged ones (:data:`FORGERIES`: unsigned, signed by a key the SP was never
given, or changed after signing), and ones for another audience or recipient, or expired.
``wsgi_app`` serves it over HTTP for the browser tests."""

import base64
import datetime as dt
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.config import IdPConfig
from saml2.metadata import entity_descriptor
from saml2.saml import NAME_FORMAT_BASIC, NAMEID_FORMAT_PERSISTENT, NameID
from saml2.server import Server

XMLSEC = "/usr/bin/xmlsec1"

# How an answer can be forged (``TestIdp.answer(forgery=…)``): no signature at all; signed with
# the IdP's entity id but a key of the forger's own (not the one in the metadata the SP trusts);
# or signed by the real key, then its subject and attributes rewritten (the signature no longer
# matches what it covers).
FORGERIES = ("unsigned", "other_key", "tampered")
TAMPERED_SUBJECT, TAMPERED_UID = "root-0", "root"


def make_key_pair(directory: Path, name: str) -> tuple[str, str]:
    """A 2048-bit RSA key and a self-signed certificate for it, as PEM files."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    key_file, cert_file = directory / f"{name}.key", directory / f"{name}.crt"
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return str(key_file), str(cert_file)


class TestIdp:
    """One IdP at ``base`` (``/sso``, ``/slo``); :meth:`trust` loads the SP's metadata."""

    __test__ = False  # not a test class

    def __init__(self, directory: Path, base: str):
        self.directory, self.base = directory, base.rstrip("/")
        self.entity_id = f"{self.base}/metadata"
        self.key_file, self.cert_file = make_key_pair(directory, "idp")
        self.forger_keys: tuple[str, str] | None = None  # made at the first "other_key" answer
        self.sp_metadata_file = ""
        self.server = Server(config=self._config(lifetime_minutes=15))

    def _config(self, *, lifetime_minutes: int, keys: tuple[str, str] | None = None) -> IdPConfig:
        key_file, cert_file = keys or (self.key_file, self.cert_file)
        conf = {
            "entityid": self.entity_id,
            "xmlsec_binary": XMLSEC,
            "key_file": key_file,
            "cert_file": cert_file,
            "metadata": {"local": [self.sp_metadata_file]} if self.sp_metadata_file else {},
            "service": {
                "idp": {
                    "name": "Test IdP",
                    "endpoints": {
                        "single_sign_on_service": [(f"{self.base}/sso", BINDING_HTTP_REDIRECT)],
                        "single_logout_service": [(f"{self.base}/slo", BINDING_HTTP_REDIRECT)],
                    },
                    "policy": {
                        "default": {
                            "lifetime": {"minutes": lifetime_minutes},
                            "attribute_restrictions": None,
                            "name_form": NAME_FORMAT_BASIC,
                        }
                    },
                    "name_id_format": [NAMEID_FORMAT_PERSISTENT],
                    "want_authn_requests_signed": False,
                }
            },
        }
        config = IdPConfig()
        config.load(conf)
        return config

    def metadata(self) -> str:
        return str(entity_descriptor(self._config(lifetime_minutes=15)))

    def write_metadata(self) -> str:
        path = self.directory / f"{Path(self.key_file).stem}-metadata.xml"
        path.write_text(self.metadata())
        return str(path)

    def trust(self, sp_metadata: str) -> None:
        path = self.directory / "sp-metadata.xml"
        path.write_text(sp_metadata)
        self.sp_metadata_file = str(path)
        self.server = Server(config=self._config(lifetime_minutes=15))

    def answer(
        self,
        location: str,
        *,
        subject: str,
        attributes: dict,
        forgery: str | None = None,
        audience: str | None = None,
        destination: str | None = None,
        lifetime_minutes: int = 15,
    ) -> dict:
        """The form fields (``SAMLResponse``, ``RelayState``) the IdP posts back for the SP's
        redirect to ``location`` (its ``/sso?SAMLRequest=…``); with ``forgery`` (one of
        :data:`FORGERIES`) a forged answer to that same request."""
        if forgery is not None and forgery not in FORGERIES:
            raise ValueError(f"unknown forgery {forgery!r}")
        query = parse_qs(urlsplit(location).query)
        server, keys = self.server, None
        if forgery == "other_key":
            if self.forger_keys is None:
                self.forger_keys = make_key_pair(self.directory, "forger")
            keys = self.forger_keys
        if keys or lifetime_minutes != 15:
            server = Server(config=self._config(lifetime_minutes=lifetime_minutes, keys=keys))
        request = server.parse_authn_request(query["SAMLRequest"][0], BINDING_HTTP_REDIRECT)
        args = server.response_args(request.message)
        if audience is not None:
            args["sp_entity_id"] = audience
        if destination is not None:
            args["destination"] = destination
        response = server.create_authn_response(
            identity=attributes,
            userid=subject,
            name_id=NameID(format=NAMEID_FORMAT_PERSISTENT, text=subject),
            authn={
                "class_ref": "urn:oasis:names:tc:SAML:2.0:ac:classes:Password",
                "authn_auth": self.entity_id,
            },
            sign_assertion=forgery != "unsigned",
            sign_response=False,
            **args,
        )
        xml = str(response)
        if forgery == "tampered":
            xml = _rewrite_identity(xml, subject=subject, uid=attributes.get("uid", [""])[0])
        return {
            "SAMLResponse": base64.b64encode(xml.encode()).decode(),
            "RelayState": query.get("RelayState", [""])[0],
            "action": args["destination"],
        }

    def unsolicited(self, *, sp_entity_id: str, acs: str, subject: str, attributes: dict) -> dict:
        """An IdP-initiated answer (no request): what SAML_ALLOW_IDP_INITIATED governs."""
        response = self.server.create_authn_response(
            identity=attributes,
            in_response_to=None,
            destination=acs,
            sp_entity_id=sp_entity_id,
            userid=subject,
            name_id=NameID(format=NAMEID_FORMAT_PERSISTENT, text=subject),
            authn={
                "class_ref": "urn:oasis:names:tc:SAML:2.0:ac:classes:Password",
                "authn_auth": self.entity_id,
            },
            sign_assertion=True,
            sign_response=False,
        )
        return {"SAMLResponse": base64.b64encode(str(response).encode()).decode()}

    def logout_request(self, *, sp_entity_id: str, sls: str, subject: str) -> str:
        """A signed IdP-initiated LogoutRequest (HTTP-Redirect): the URL to our SLS."""
        _, request = self.server.create_logout_request(
            sls,
            sp_entity_id,
            name_id=NameID(format=NAMEID_FORMAT_PERSISTENT, text=subject),
            sign=False,
        )
        http = self.server.apply_binding(
            BINDING_HTTP_REDIRECT, str(request), sls, relay_state="", sign=True
        )
        return dict(http["headers"])["Location"]

    def answer_logout(self, location: str) -> str:
        """The LogoutResponse (a URL to the SP's SLS) to an SP's LogoutRequest at ``location``."""
        query = parse_qs(urlsplit(location).query)
        request = self.server.parse_logout_request(query["SAMLRequest"][0], BINDING_HTTP_REDIRECT)
        response = self.server.create_logout_response(request.message, [BINDING_HTTP_REDIRECT])
        sls = self.server.metadata.single_logout_service(
            request.message.issuer.text, BINDING_HTTP_REDIRECT, "spsso"
        )[0]["location"]
        http = self.server.apply_binding(
            BINDING_HTTP_REDIRECT, str(response), sls, relay_state="", response=True
        )
        return dict(http["headers"])["Location"]


def _rewrite_identity(xml: str, *, subject: str, uid: str) -> str:
    """A signed answer with its NameID (and ``uid`` attribute) changed to another person's, the
    signature left as it was: what an attacker who captured one answer would try."""
    forged = xml.replace(f">{subject}</", f">{TAMPERED_SUBJECT}</")
    if uid:
        forged = forged.replace(f">{uid}</", f">{TAMPERED_UID}</")
    assert TAMPERED_SUBJECT in forged, "the answer does not carry the subject to rewrite"
    return forged


def wsgi_app(idp: TestIdp, *, subject: str, attributes: dict, forgery: str | None = None):
    """The IdP over HTTP for a browser: ``/sso`` answers at once (the user is 'signed in' at
    the IdP) with a page whose form posts the signed answer to the SP, or with ``forgery`` a
    forged one (see :data:`FORGERIES`)."""

    def app(environ, start_response):
        if environ["PATH_INFO"] != "/sso":
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found"]
        location = f"{idp.base}/sso?{environ.get('QUERY_STRING', '')}"
        fields = idp.answer(location, subject=subject, attributes=attributes, forgery=forgery)
        page = (
            "<!doctype html><html><body><h1>Test IdP</h1>"
            f'<form method="post" action="{fields["action"]}">'
            f'<input type="hidden" name="SAMLResponse" value="{fields["SAMLResponse"]}">'
            f'<input type="hidden" name="RelayState" value="{fields["RelayState"]}">'
            '<button id="continue" type="submit">Continue to the workbench</button>'
            "</form></body></html>"
        )
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [page.encode()]

    return app


BINDINGS = (BINDING_HTTP_POST, BINDING_HTTP_REDIRECT)
