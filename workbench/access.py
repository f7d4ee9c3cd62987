"""Who may reach what: one declarative table of every page, htmx fragment, action, download and
API endpoint, by role.

:class:`workbench.middleware.AccessMiddleware` enforces it before any view runs: a URL name missing
from the table answers 404 (nothing is reachable by accident), anonymous users are sent to the
login page, a role the entry does not list gets 403. Object scope (is this item *yours*?) stays in
the selectors (404). Views keep their ``role_required`` as a second lock; a test checks the two
agree and that every URL pattern has an entry.

Downloads also declare, per role, the fields they contain (:data:`ALL_FIELDS`, or a
:data:`FieldSpec` whitelist that :func:`project` applies line by line), so what a lead downloads
is decided here, not by whoever renders the file. The crawl test
(``tests/workbench/web/test_blinding_crawl.py``) walks every entry for every role on the seeded
demo.

To add an endpoint (the API included), add an :class:`Entry` to :data:`ENTRIES` — or call
:func:`register` from the app that owns it — with its roles, its htmx fragments and, for a
download, its fields per role.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Union

from workbench.roles import Role

ANNOTATOR, LEAD, ADMIN = Role.ANNOTATOR.value, Role.LEAD.value, Role.ADMIN.value
EVERYONE = frozenset({ANNOTATOR, LEAD, ADMIN})
LEADS = frozenset({LEAD, ADMIN})
ADMINS = frozenset({ADMIN})
ANNOTATORS = frozenset({ANNOTATOR})

# A field spec: ALL_FIELDS, or {key: True (keep as is) | PSEUDONYM (replace the person named by
# a pseudonym) | a nested spec (for a dict value, or each dict of a list value)}.
ALL_FIELDS = "*"
PSEUDONYM = "pseudonym"
FieldSpec = Union[str, Mapping[str, Union[bool, str, "FieldSpec"]]]  # noqa: UP007


class Kind(StrEnum):
    PAGE = "page"  # GET renders a page (and maybe htmx fragments)
    ACTION = "action"  # POST only: changes something and redirects
    DOWNLOAD = "download"  # a file
    API = "api"  # a REST endpoint (/api/v1/)


@dataclass(frozen=True)
class Entry:
    name: str  # the URL name, "namespace:name"; "namespace:*" covers a whole namespace
    kind: Kind
    roles: frozenset[str] | None  # None: anonymous callers too
    fragments: tuple[str, ...] = ()  # htmx targets the same URL serves alone
    fields: Mapping[str, FieldSpec] = field(default_factory=dict)  # download: role → spec
    variants: Mapping[str, Mapping[str, FieldSpec]] = field(
        default_factory=dict
    )  # fmt → role → spec
    # Inside a project (DESIGN.md §15): the project is resolved from the URL and the roles are
    # the caller's roles in it. False: an installation page (sign-in, tokens, projects).
    scoped: bool = True


# What a lead's adjudication export holds: labels, rationales and results under pseudonyms, and
# nothing that identifies the system: no system, run, model, configuration, prompt hash, latency
# or cost (a whitelist, so a field added to the export later stays out until declared here).
_LABEL_FIELDS = {
    "slot": True,
    "reviewer": PSEUDONYM,
    "reviewer_role": True,
    "acceptability": True,
    "grounding": True,
    "evidence_sufficiency": True,
    "citation_correctness": True,
    "conflict_handling": True,
    "safety_boundary": True,
    "severe_safety": True,
    "primary_failure": True,
    "secondary_failures": True,
    "rationale": True,
    "labeled_at": True,
    # time on item and the guideline version (issue 14): figures, no identity
    "server_ms": True,
    "active_ms": True,
    "guideline_version": True,
}
LEAD_ADJUDICATION_FIELDS: FieldSpec = {
    "item_id": True,
    "question_id": True,
    "domain": True,
    "task_family": True,
    "tier": True,
    "status": True,
    "labels": _LABEL_FIELDS,
    "adjudication": {
        "reviewer": PSEUDONYM,
        "reviewer_role": True,
        "reason": True,
        "acceptability": True,
        "grounding": True,
        "severe_safety": True,
        "primary_failure": True,
        "secondary_failures": True,
        "rationale": True,
        "changed_outcome": True,
        "adjudicated_at": True,
        "server_ms": True,
        "active_ms": True,
        "guideline_version": True,
    },
    "audit_sample": True,
    "final": True,
}
# Gold JSONL for leads: every field, the people in it as the version's pseudonyms.
LEAD_GOLD_FIELDS: FieldSpec = {
    "id": True,
    "question": True,
    "expected_block": True,
    "expected_answer": True,
    "metadata": {
        "domain": True,
        "difficulty": True,
        "task_type": True,
        "tier": True,
        "source": True,
        "customer": True,
        "flags": True,
        "added_by": PSEUDONYM,
        "added_at": True,
        "reviewed_by": PSEUDONYM,
        "resolution": True,
    },
}
# Pairwise gold for leads: decided pairs without record ids or systems (blind as the pages),
# reviewers and leads as the version's pseudonyms.
LEAD_PAIRWISE_FIELDS: FieldSpec = {
    "task": True,
    "pair": True,
    "question_id": True,
    "status": True,
    "preference": True,
    "source": True,
    "judgments": {"reviewer": PSEUDONYM, "preference": True, "strength": True, "left": True},
    "adjudication": {"lead": PSEUDONYM, "preference": True, "strength": True, "rationale": True},
}
VERSION_FILE_FIELDS: Mapping[str, Mapping[str, FieldSpec]] = {
    "gold_jsonl": {LEAD: LEAD_GOLD_FIELDS, ADMIN: ALL_FIELDS},
    "unrag_json": {LEAD: ALL_FIELDS, ADMIN: ALL_FIELDS},  # blocks and questions only
    "probe_questions": {LEAD: ALL_FIELDS, ADMIN: ALL_FIELDS},
    "probe_packets": {LEAD: ALL_FIELDS, ADMIN: ALL_FIELDS},
    "adjudication": {LEAD: LEAD_ADJUDICATION_FIELDS, ADMIN: ALL_FIELDS},
    "trec_qrels": {LEAD: ALL_FIELDS, ADMIN: ALL_FIELDS},  # triple and block ids, no person
    "manifest": {LEAD: ALL_FIELDS, ADMIN: ALL_FIELDS},  # counts, checksums, the admin who froze
    "pairwise_gold": {LEAD: LEAD_PAIRWISE_FIELDS, ADMIN: ALL_FIELDS},
}
# Dashboard tables: figures and display names (the protocol lets leads see who agrees with whom).
AGREEMENT_FIELDS = {LEAD: ALL_FIELDS, ADMIN: ALL_FIELDS}

ENTRIES: list[Entry] = [
    # workbench
    # home: the projects home at /, a project's dashboard at /p/<slug>/ (workbench.views.home)
    Entry("home", Kind.PAGE, EVERYONE, scoped=False),
    Entry("login", Kind.PAGE, None, scoped=False),
    Entry("logout", Kind.ACTION, None, scoped=False),
    Entry("health", Kind.PAGE, None, scoped=False),
    # OpenID Connect sign-in (404 unless OIDC_ENABLED): start, the provider's redirect, logout
    Entry("oidc_authentication_init", Kind.PAGE, None, scoped=False),
    Entry("oidc_authentication_callback", Kind.PAGE, None, scoped=False),
    Entry("oidc_logout", Kind.ACTION, None, scoped=False),
    # personal API tokens: each user their own (object scope in the service)
    Entry("api_tokens", Kind.PAGE, EVERYONE, scoped=False),
    Entry("api_token_revoke", Kind.ACTION, EVERYONE, scoped=False),
    # identity (issue 31): installation admins only (the views refuse project admins with 403)
    Entry("identity:page", Kind.PAGE, ADMINS, scoped=False),
    Entry("identity:scim_token_revoke", Kind.ACTION, ADMINS, scoped=False),
    Entry("identity:person_action", Kind.ACTION, ADMINS, scoped=False),
    # SAML 2.0 sign-in (404 unless SAML_ENABLED): metadata, start, the IdP's answer, logout
    Entry("saml:metadata", Kind.PAGE, None, scoped=False),
    Entry("saml:login", Kind.PAGE, None, scoped=False),
    Entry("saml:acs", Kind.ACTION, None, scoped=False),
    Entry("saml:sls", Kind.PAGE, None, scoped=False),
    Entry("saml:logout", Kind.ACTION, None, scoped=False),
    # SCIM 2.0 for directories: a SCIM bearer token, checked by the views (workbench.scim)
    *(
        Entry(f"scim:{name}", Kind.API, None, scoped=False)
        for name in (
            "users",
            "user",
            "groups",
            "group",
            "service_provider_config",
            "resource_types",
            "resource_type",
            "schemas",
            "schema",
        )
    ),
    # the Django admin checks is_staff itself; its login goes through the same throttled backend
    Entry("admin:*", Kind.PAGE, None, scoped=False),
    # projects: installation admins create projects; a project's admins keep its settings and
    # members (the project pages are scoped: the project comes from the URL)
    Entry("projects:create", Kind.PAGE, ADMINS, scoped=False),
    Entry("projects:settings", Kind.PAGE, ADMINS),
    Entry("projects:protocol_settings", Kind.ACTION, ADMINS),
    Entry("projects:members", Kind.PAGE, ADMINS),
    Entry("projects:member_remove", Kind.ACTION, ADMINS),
    Entry("projects:archive", Kind.ACTION, ADMINS),
    Entry("projects:delete", Kind.ACTION, ADMINS),
    # the project's whole state as a bundle (goldset.services.project_bundle)
    Entry("projects:bundle", Kind.DOWNLOAD, ADMINS, fields={ADMIN: ALL_FIELDS}),
    # corpus
    Entry("corpus:documents", Kind.PAGE, EVERYONE),
    Entry("corpus:search", Kind.PAGE, EVERYONE),
    Entry("corpus:document", Kind.PAGE, EVERYONE),
    Entry("corpus:block", Kind.PAGE, EVERYONE),
    Entry("corpus:import", Kind.PAGE, ADMINS),
    # curation: authoring and review (annotators), discussion (author, flagging reviewer, leads)
    Entry("curation:triples", Kind.PAGE, ANNOTATORS),
    Entry("curation:write", Kind.PAGE, ANNOTATORS),
    Entry("curation:blocks", Kind.PAGE, EVERYONE, fragments=("block-results",)),
    Entry("curation:triple", Kind.PAGE, EVERYONE),
    Entry("curation:message", Kind.ACTION, EVERYONE, fragments=("discussion",)),
    Entry("curation:revise", Kind.PAGE, EVERYONE),
    Entry("curation:split", Kind.PAGE, EVERYONE),
    Entry("curation:drop", Kind.ACTION, EVERYONE),
    Entry("curation:verify", Kind.ACTION, EVERYONE),
    Entry("curation:queue", Kind.PAGE, ANNOTATORS),
    Entry("curation:next", Kind.PAGE, ANNOTATORS),
    Entry("curation:review", Kind.PAGE, ANNOTATORS, fragments=("review-card", "review-item")),
    Entry("curation:review_skip", Kind.ACTION, ANNOTATORS, fragments=("review-item",)),
    Entry("curation:review_undo", Kind.ACTION, ANNOTATORS, fragments=("review-item",)),
    # curation: leads
    Entry("curation:dashboard", Kind.PAGE, LEADS),
    Entry("curation:rereview", Kind.PAGE, LEADS),
    Entry("curation:repin", Kind.ACTION, LEADS),
    Entry("curation:retire", Kind.ACTION, LEADS),
    Entry("curation:slices", Kind.PAGE, LEADS),
    Entry("curation:slice", Kind.PAGE, LEADS),
    Entry("curation:spot_checks", Kind.PAGE, LEADS),
    Entry("curation:quality", Kind.PAGE, LEADS),
    Entry("curation:import", Kind.PAGE, LEADS),
    # curation: customers (admins)
    Entry("curation:customers", Kind.PAGE, ADMINS),
    Entry("curation:customer", Kind.PAGE, ADMINS),
    Entry("curation:grant", Kind.ACTION, ADMINS),
    Entry("curation:revoke", Kind.ACTION, ADMINS),
    # answers: annotators label blind
    Entry("answers:queue", Kind.PAGE, ANNOTATORS, fragments=("queue-summary",)),
    Entry("answers:claim", Kind.ACTION, ANNOTATORS),
    Entry("answers:item", Kind.PAGE, ANNOTATORS, fragments=("label-form", "label-item")),
    Entry("answers:skip", Kind.ACTION, ANNOTATORS),
    Entry("answers:undo", Kind.ACTION, ANNOTATORS),
    Entry("answers:calibration", Kind.PAGE, ANNOTATORS),
    Entry("answers:calibration_start", Kind.ACTION, ANNOTATORS),
    # answers: leads
    Entry("answers:adjudication_queue", Kind.PAGE, LEADS, fragments=("adjudication-items",)),
    Entry(
        "answers:adjudicate",
        Kind.PAGE,
        LEADS,
        fragments=("adjudication-form", "adjudication-item"),
    ),
    Entry("answers:calibration_status", Kind.PAGE, LEADS),
    Entry("answers:calibration_set", Kind.PAGE, LEADS),
    Entry("answers:calibration_reference", Kind.PAGE, LEADS),
    # answers: admins (systems and runs are visible to admins only)
    Entry("answers:import", Kind.PAGE, ADMINS),
    Entry("answers:runs", Kind.PAGE, ADMINS),
    Entry("answers:export", Kind.PAGE, ADMINS),
    Entry("answers:export_download", Kind.DOWNLOAD, ADMINS, fields={ADMIN: ALL_FIELDS}),
    # pairwise review (issue 30): reviewers judge blind pairs; leads and admins create tasks,
    # adjudicate splits blind and read the analysis (systems named for admins only: selectors)
    Entry("pairwise:queue", Kind.PAGE, ANNOTATORS),
    Entry("pairwise:claim", Kind.ACTION, ANNOTATORS),
    Entry("pairwise:judge", Kind.PAGE, ANNOTATORS, fragments=("pair-item",)),
    Entry("pairwise:skip", Kind.ACTION, ANNOTATORS),
    Entry("pairwise:undo", Kind.ACTION, ANNOTATORS),
    Entry("pairwise:tasks", Kind.PAGE, LEADS),
    Entry("pairwise:create", Kind.PAGE, LEADS),
    Entry("pairwise:analysis", Kind.PAGE, LEADS),
    # the upload of judgments names reviewers: admins, as api:pairwise_judgments_import
    Entry("pairwise:import", Kind.PAGE, ADMINS),
    Entry("pairwise:adjudicate", Kind.PAGE, LEADS, fragments=("pair-adjudication",)),
    # pairwise qualification: reviewers judge calibration pairs; leads add them and grant retakes
    Entry("pairwise:calibration", Kind.PAGE, ANNOTATORS),
    Entry("pairwise:calibration_set", Kind.PAGE, LEADS),
    Entry("pairwise:add_calibration", Kind.ACTION, LEADS),
    Entry("pairwise:reset_calibration", Kind.ACTION, LEADS),
    # inbox and notifications: each user their own (object scope in the selectors)
    Entry("inbox:notifications", Kind.PAGE, EVERYONE, fragments=("notification-list",)),
    Entry("inbox:badge", Kind.PAGE, EVERYONE, fragments=("notification-badge",)),
    Entry("inbox:open", Kind.PAGE, EVERYONE),
    Entry("inbox:mark_read", Kind.ACTION, EVERYONE),
    Entry("inbox:mark_all_read", Kind.ACTION, EVERYONE),
    Entry("inbox:settings", Kind.PAGE, EVERYONE),
    # calibration retakes: the annotator asks, a lead answers
    Entry("inbox:retake_request", Kind.ACTION, ANNOTATORS),
    Entry("inbox:retakes", Kind.PAGE, LEADS),
    Entry("inbox:retake_decide", Kind.ACTION, LEADS),
    # background imports: the uploader's own job (object scope in the selector)
    Entry("imports:job", Kind.PAGE, EVERYONE, fragments=("import-progress",)),
    # cancel / retry: the roles that can start an import; the user who started it, or an admin
    # (object scope in the selector, as for the page)
    Entry("imports:cancel", Kind.ACTION, LEADS, fragments=("import-progress",)),
    Entry("imports:retry", Kind.ACTION, LEADS, fragments=("import-progress",)),
    # routing and promotion
    Entry("routing:rules", Kind.PAGE, ADMINS),
    Entry("routing:reroute", Kind.PAGE, ADMINS),
    Entry("promotion:index", Kind.PAGE, LEADS),
    Entry("promotion:triple", Kind.PAGE, LEADS),
    Entry("promotion:record", Kind.PAGE, LEADS),
    Entry("promotion:record_triple", Kind.PAGE, LEADS),  # a labeled record → a gold triple
    # quality dashboards
    Entry("quality:agreement", Kind.PAGE, LEADS, fragments=("confusion",)),
    Entry("quality:agreement-download", Kind.DOWNLOAD, LEADS, fields=AGREEMENT_FIELDS),
    Entry("quality:alerts", Kind.PAGE, LEADS),
    Entry("quality:disagreements", Kind.PAGE, LEADS),
    Entry("quality:table-download", Kind.DOWNLOAD, LEADS, fields=AGREEMENT_FIELDS),
    Entry("quality:recompute", Kind.ACTION, LEADS),
    Entry("quality:fast_decisions", Kind.PAGE, LEADS),
    # guidelines in the task (issue 14): leads and admins write them; work pages show them
    Entry("guidelines:list", Kind.PAGE, LEADS),
    Entry("guidelines:edit", Kind.PAGE, LEADS),
    Entry("guidelines:version", Kind.PAGE, LEADS),
    # gold versions (leads and admins) and scoring jobs (admins)
    Entry("exports:versions", Kind.PAGE, LEADS),
    Entry("exports:freeze", Kind.PAGE, ADMINS, fragments=("freeze-preview",)),
    Entry("exports:diff", Kind.PAGE, LEADS),
    Entry("exports:version", Kind.PAGE, LEADS),
    Entry("exports:download", Kind.DOWNLOAD, LEADS, variants=VERSION_FILE_FIELDS),
    # version tags: everyone who sees versions sees them (on the versions pages); admins move
    Entry("exports:tag_set", Kind.ACTION, ADMINS),
    Entry("exports:tag_delete", Kind.ACTION, ADMINS),
    Entry("exports:jobs", Kind.PAGE, ADMINS),
    Entry("exports:compare", Kind.PAGE, ADMINS),
    Entry("exports:job", Kind.PAGE, ADMINS, fragments=("job-progress",)),
    Entry("exports:retry", Kind.ACTION, ADMINS),
    Entry("exports:cancel", Kind.ACTION, ADMINS),
    Entry("exports:job_download", Kind.DOWNLOAD, ADMINS, fields={ADMIN: ALL_FIELDS}),
    # evaluators: identity pages answer 404 to everyone but admins (selectors), like systems;
    # the evaluator report names evaluators by pseudonym for leads (selectors)
    Entry("evaluators:list", Kind.PAGE, EVERYONE),
    Entry("evaluators:detail", Kind.PAGE, EVERYONE),
    Entry("evaluators:report", Kind.PAGE, LEADS),
    Entry(
        "evaluators:report_json",
        Kind.DOWNLOAD,
        LEADS,
        fields={LEAD: ALL_FIELDS, ADMIN: ALL_FIELDS},
    ),
    Entry("evaluators:calibrations", Kind.PAGE, ADMINS),
    Entry("evaluators:calibration", Kind.PAGE, ADMINS, fragments=("calibration-progress",)),
    Entry("evaluators:releases", Kind.PAGE, ADMINS),
    Entry("evaluators:release", Kind.PAGE, ADMINS),
    Entry("evaluators:release_html", Kind.DOWNLOAD, ADMINS, fields={ADMIN: ALL_FIELDS}),
    Entry("evaluators:release_json", Kind.DOWNLOAD, ADMINS, fields={ADMIN: ALL_FIELDS}),
    # webhooks (admins): endpoints, their secret shown once, delivery log, test, redeliver
    # production traces received over OTLP (issue 28): they name systems and models
    Entry("traces:overview", Kind.PAGE, ADMINS),
    Entry("traces:trace", Kind.PAGE, ADMINS),  # one trace's spans as received
    Entry("traces:sampling", Kind.PAGE, ADMINS),  # sampling rules: list, create
    Entry("traces:sampling_rule", Kind.PAGE, ADMINS),  # edit one (a new version)
    Entry("traces:sampling_enabled", Kind.ACTION, ADMINS),
    Entry("webhooks:endpoints", Kind.PAGE, ADMINS),
    Entry("webhooks:endpoint", Kind.PAGE, ADMINS),
    Entry("webhooks:enabled", Kind.ACTION, ADMINS),
    Entry("webhooks:test", Kind.ACTION, ADMINS),
    Entry("webhooks:redeliver", Kind.ACTION, ADMINS),
    # the audit log (admins): filters, keyset pages, the filtered rows as CSV
    Entry("audit:log", Kind.PAGE, ADMINS),
    Entry("audit:csv", Kind.DOWNLOAD, ADMINS, fields={ADMIN: ALL_FIELDS}),
    # REST API v1 (goldset.views.api): the same roles as the pages that do the same thing.
    # DRF authenticates (session or token) and AccessTablePermission applies these roles.
    Entry("api:schema", Kind.API, None, scoped=False),
    Entry("api:docs", Kind.API, None, scoped=False),
    Entry(
        "api:not_found", Kind.API, None, scoped=False
    ),  # any other /api/v1/ URL: a problem+json 404
    # the projects the caller belongs to, with the role in each (an installation list); POST
    # creates one (installation admins, as projects:create)
    Entry("api:projects", Kind.API, EVERYONE, scoped=False),
    # the project itself (/api/v1/projects/<slug>/): its members read it; PATCH needs the roles
    # of projects:settings (and projects:archive), DELETE those of projects:delete and an
    # installation admin (goldset.views.api_projects)
    Entry("api:project", Kind.API, EVERYONE),
    Entry("api:project_settings", Kind.API, ADMINS),  # projects:settings, protocol_settings
    Entry("api:project_members", Kind.API, ADMINS),  # projects:members
    Entry("api:project_member", Kind.API, ADMINS),  # projects:members, member_remove
    Entry("api:domains", Kind.API, EVERYONE),
    Entry("api:documents", Kind.API, EVERYONE),
    Entry("api:document", Kind.API, EVERYONE),
    Entry("api:document_blocks", Kind.API, EVERYONE),  # corpus:document
    Entry("api:block_versions", Kind.API, EVERYONE),  # corpus:block
    Entry("api:block_version", Kind.API, EVERYONE),
    # triples in the caller's scope (goldset.selectors.curation.list_triples_for, like
    # curation:triple: annotators their own and those they flagged; 404 for any other)
    Entry("api:triples", Kind.API, EVERYONE),
    Entry("api:triple", Kind.API, EVERYONE),
    Entry("api:triples_import", Kind.API, LEADS),  # curation:import
    Entry("api:questions_import", Kind.API, ADMINS),  # answers:import
    Entry("api:answers_import", Kind.API, ADMINS),  # answers:import
    Entry("api:evaluator_outputs_import", Kind.API, ADMINS),  # evaluators:detail (admins only)
    # each import kind further needs the roles of its upload page (goldset.views.api.IMPORT_PAGE)
    Entry("api:imports", Kind.API, EVERYONE),
    Entry("api:import", Kind.API, EVERYONE),
    Entry("api:import_cancel", Kind.API, LEADS),  # imports:cancel
    Entry("api:import_retry", Kind.API, LEADS),  # imports:retry
    Entry("api:versions", Kind.API, LEADS),
    Entry("api:version", Kind.API, LEADS),
    Entry("api:version_diff", Kind.API, LEADS),
    Entry("api:version_freeze", Kind.API, ADMINS),  # exports:freeze
    Entry("api:version_download", Kind.API, LEADS, variants=VERSION_FILE_FIELDS),
    # version tags: read by leads and admins; PUT and DELETE need exports:tag_set's roles
    Entry("api:tags", Kind.API, LEADS),
    Entry("api:tag", Kind.API, LEADS),
    Entry("api:jobs", Kind.API, ADMINS),
    Entry("api:job", Kind.API, ADMINS),
    Entry("api:job_queries", Kind.API, ADMINS),
    Entry("api:job_compare", Kind.API, ADMINS),  # exports:compare
    Entry("api:agreement_snapshots", Kind.API, LEADS),  # quality:agreement
    Entry("api:alerts", Kind.API, LEADS),
    # labels, reviews, adjudications (issue 29): reads through the pages' selectors (annotators
    # their own; leads what their adjudication queue opens); a POST needs the roles of the page
    # that does the same (answers:item, curation:review, answers:adjudicate; checked in the view)
    Entry("api:labels", Kind.API, EVERYONE),
    Entry("api:label", Kind.API, EVERYONE),
    Entry("api:label_claim", Kind.API, ANNOTATORS),  # answers:claim
    Entry("api:reviews", Kind.API, EVERYONE),
    Entry("api:review", Kind.API, EVERYONE),
    Entry("api:review_claim", Kind.API, ANNOTATORS),  # curation:next
    Entry("api:adjudications", Kind.API, LEADS),
    Entry("api:adjudication", Kind.API, LEADS),
    Entry("api:adjudication_queue", Kind.API, LEADS),  # answers:adjudication_queue
    Entry("api:webhooks", Kind.API, ADMINS),  # webhooks:endpoints
    Entry("api:webhook", Kind.API, ADMINS),  # webhooks:endpoint
    Entry("api:webhook_deliveries", Kind.API, ADMINS),  # webhooks:endpoint (its log)
    Entry("api:webhook_test", Kind.API, ADMINS),  # webhooks:test
    Entry("api:webhook_redeliver", Kind.API, ADMINS),  # webhooks:redeliver
    # pairwise review (issue 30): the pages' roles (pairwise:*)
    Entry("api:pairwise_tasks", Kind.API, LEADS),
    Entry("api:pairwise_judgments", Kind.API, LEADS),
    Entry("api:pairwise_analysis", Kind.API, LEADS),
    Entry("api:pairwise_judgments_import", Kind.API, ADMINS),
    Entry("api:pairwise_claim", Kind.API, ANNOTATORS),
    Entry("api:pairwise_pair", Kind.API, ANNOTATORS),
    Entry("api:pairwise_judge", Kind.API, ANNOTATORS),
    Entry("api:pairwise_skip", Kind.API, ANNOTATORS),  # pairwise:skip
    Entry("api:pairwise_undo", Kind.API, ANNOTATORS),  # pairwise:undo
    Entry("api:pairwise_runs", Kind.API, LEADS),  # pairwise:create's runs
    Entry("api:pairwise_adjudications", Kind.API, LEADS),  # pairwise:tasks' splits
    Entry("api:pairwise_adjudication", Kind.API, LEADS),  # pairwise:adjudicate
    # pairwise qualification: pairwise:calibration_set and the tasks page's results for leads,
    # pairwise:calibration for reviewers
    Entry("api:pairwise_calibration_pairs", Kind.API, LEADS),
    Entry("api:pairwise_calibration_candidate", Kind.API, LEADS),
    Entry("api:pairwise_qualifications", Kind.API, LEADS),
    Entry("api:pairwise_qualification", Kind.API, ANNOTATORS),
    Entry("api:pairwise_calibration_claim", Kind.API, ANNOTATORS),
    Entry("api:pairwise_calibration_judge", Kind.API, ANNOTATORS),
    # OTLP/HTTP traces (issue 28): spans name systems and models, which only admins see
    Entry("api:otlp_traces", Kind.API, ADMINS),
    Entry("api:sampling_rules", Kind.API, ADMINS),  # traces:sampling
    Entry("api:sampling_rule", Kind.API, ADMINS),  # traces:sampling_rule, traces:sampling_enabled
]

ACCESS: dict[str, Entry] = {}


def register(*entries: Entry) -> None:
    """Add entries (an app's API endpoints, say). A name registered twice is a mistake."""
    for entry in entries:
        if entry.name in ACCESS:
            raise ValueError(f"{entry.name} is already in the access table")
        ACCESS[entry.name] = entry


register(*ENTRIES)


def entry_for(view_name: str | None) -> Entry | None:
    if not view_name:
        return None
    if view_name in ACCESS:
        return ACCESS[view_name]
    namespace, _, _ = view_name.rpartition(":")
    return ACCESS.get(f"{namespace}:*") if namespace else None


_PRECEDENCE = (ADMIN, LEAD, ANNOTATOR)


def fields_for(entry: Entry, roles: frozenset[str], *, variant: str | None = None):
    """The field spec the strongest of ``roles`` gets from a download, or None (not theirs)."""
    table = entry.variants.get(variant or "", {}) if entry.variants else entry.fields
    for role in _PRECEDENCE:
        if role in roles and role in table:
            return table[role]
    return None


def project(obj, spec: FieldSpec, *, pseudonym):
    """``obj`` reduced to ``spec``; people under PSEUDONYM keys replaced by ``pseudonym(value)``."""
    if spec == ALL_FIELDS:
        return obj
    if isinstance(obj, list):
        return [project(item, spec, pseudonym=pseudonym) for item in obj]
    if not isinstance(obj, dict):
        return obj
    out = {}
    for key, rule in spec.items():
        if key not in obj:
            continue
        value = obj[key]
        if rule is True:
            out[key] = value
        elif rule == PSEUDONYM:
            out[key] = (
                [pseudonym(v) for v in value] if isinstance(value, list) else pseudonym(value)
            )
        elif value is None:
            out[key] = None
        else:
            out[key] = project(value, rule, pseudonym=pseudonym)
    return out
