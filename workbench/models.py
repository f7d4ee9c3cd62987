from django.conf import settings
from django.db import models


class AuditEvent(models.Model):
    """One thing someone viewed or changed. Append-only: rows are never updated or deleted
    (enforced by a trigger on PostgreSQL; the service layer only inserts)."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    verb = models.CharField(max_length=64)
    # The project the event happened in; empty for installation-level events (sign-ins,
    # tokens valid in every project). No database constraint: the log is append-only and
    # outlives a deleted project (its id stays, and the project.delete event names it).
    project = models.ForeignKey(
        "goldset.Project",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    object_type = models.CharField(max_length=64, blank=True)
    object_id = models.CharField(max_length=128, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    request_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["object_type", "object_id"]),
            models.Index(fields=["actor", "created_at"]),
            models.Index(fields=["verb", "created_at"]),
            models.Index(fields=["project", "created_at"], name="audit_by_project"),
        ]

    def __str__(self):
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_id} {self.verb} {self.object_type}:{self.object_id}"


class ThrottleScope(models.TextChoices):
    ACCOUNT = "account", "Account"
    ACCOUNT_ADDRESS = "account_address", "Account and address"
    ADDRESS = "address", "Address"
    TOKEN_ADDRESS = "token_address", "Refused API tokens from an address"


class LoginThrottle(models.Model):
    """Failed password attempts in the current window for one account, one (account, address)
    pair or one address. Kept in the database, not the cache, so the lockout neither fails nor
    opens up when Redis is down. ``blocked_until`` is a lock for the account scopes and the
    earliest next attempt (a slowdown) for the address scope. The token-address scope counts
    refused API tokens from an address between two audit events (``blocked_until``: the next
    event's earliest time; workbench.services.api_tokens)."""

    scope = models.CharField(max_length=16, choices=ThrottleScope.choices)
    key = models.CharField(max_length=160)
    failures = models.PositiveIntegerField(default=0)
    window_started_at = models.DateTimeField()
    blocked_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope", "key"], name="login_throttle_unique_key")
        ]

    def __str__(self):
        return f"{self.scope}:{self.key} {self.failures}"


class TokenScope(models.TextChoices):
    READ = "read", "Read (GET only)"
    WRITE = "write", "Read and write"


class ApiToken(models.Model):
    """A personal API token. Only the sha256 of the token is stored (the token carries 256 random
    bits, so a fast hash is enough); the token itself is shown once, at creation. ``prefix`` is
    the public part shown in lists and logs."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=80)
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=8, choices=TokenScope.choices, default=TokenScope.READ)
    # One project, or every project the person belongs to (empty): the token reaches a project
    # only while its owner is a member there, with the owner's role in it.
    project = models.ForeignKey(
        "goldset.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # When its owner was told it ends within a week (workbench.services.identity).
    expiry_notified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "created_at"])]

    def __str__(self):
        return f"{self.prefix} ({self.name})"


class OidcIdentity(models.Model):
    """A user's account at an OpenID Connect provider: the provider's issuer and its stable
    subject (``sub``). Sign-ins find their user through this, never through a username or e-mail
    address the provider sends (those can change, or collide with a local account)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identities"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="oidc_identity_unique_sub")
        ]

    def __str__(self):
        return f"{self.issuer} {self.subject}"


class IdempotencyKey(models.Model):
    """A create request's key, so a repeat creates nothing: a page form's hidden token (``form:``
    keys, naming the object the first submit created) or an API ``Idempotency-Key`` header
    (``api:`` keys, keeping the first answer to replay). ``status_code`` is null while the first
    request is still running (workbench.services.idempotency)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=300)
    method = models.CharField(max_length=8, blank=True)
    path = models.CharField(max_length=300, blank=True)
    object_type = models.CharField(max_length=64, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    content_type = models.CharField(max_length=100, blank=True)
    body = models.BinaryField(default=b"", blank=True)
    location = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_unique_per_user")
        ]

    def __str__(self):
        return f"{self.user_id} {self.key}"


class UserSession(models.Model):
    """A session a person signed in with (recorded at every login, whatever the form), so an
    admin or the directory can end all of a person's sessions at once: the session rows named
    here are deleted (workbench.services.identity.end_sessions)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="signed_in_sessions"
    )
    session_key = models.CharField(max_length=40, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["user", "created_at"])]

    def __str__(self):
        return f"{self.user_id} {self.session_key[:6]}…"


class ScimToken(models.Model):
    """The bearer token a directory (Entra ID, Okta, Keycloak) provisions users with at
    ``/scim/v2/``. Created and revoked by an installation admin; only its sha256 is stored."""

    name = models.CharField(max_length=80)
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"scim {self.prefix} ({self.name})"


class ScimUser(models.Model):
    """A person the directory provisioned: their SCIM ``id`` and ``externalId``. The user row
    outlives a SCIM DELETE (``deleted_at``; the account is deactivated) so their labels and
    audit history stay attributed."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scim"
    )
    scim_id = models.UUIDField(unique=True)
    external_id = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"scim user {self.scim_id}"


class ScimGroup(models.Model):
    """A directory group. A ``displayName`` of the form ``<project-slug>:<role>`` gives its
    members that role in that project; other groups are kept but grant nothing."""

    scim_id = models.UUIDField(unique=True)
    display_name = models.CharField(max_length=255, unique=True)
    external_id = models.CharField(max_length=255, blank=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="scim_groups")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["display_name"]

    def __str__(self):
        return self.display_name


class SamlAssertion(models.Model):
    """The id of every SAML assertion that signed someone in, kept until the assertion expires,
    so a captured assertion posted again is refused (replay; workbench.services.saml)."""

    assertion_id = models.CharField(max_length=255, unique=True)
    issuer = models.CharField(max_length=255)
    expires_at = models.DateTimeField(db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.assertion_id


class SamlRequest(models.Model):
    """An authentication request this SP sent to the IdP, waiting for its answer (kept in the
    database, not the session: the IdP's answer is a cross-site POST, which carries no
    SameSite=Lax session cookie). Consumed by the first answer naming it."""

    request_id = models.CharField(max_length=255, unique=True)
    relay_state = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self):
        return self.request_id
