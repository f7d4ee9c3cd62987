"""Blinding (seed 004 §3.5, DESIGN.md §6): what each role may see of a system's identity and of
who labeled, in one place.

Annotators and leads judge answers without knowing which system, run or model produced them;
admins see everything. :data:`SYSTEM_FIELDS` is the list of every field that names or
characterises a system (on answer records, runs and systems, and in files and payloads built
from them). Every surface asks here: the blind read models and their selectors
(``BlindRecord``, promotion, disagreements), the adjudication page (``labeler_name``), the
role-reduced downloads (``workbench.access`` whitelists; a test checks none holds a system
field), webhook payloads (:func:`without_system_fields`). Notification texts carry no record data at
all (counts and links: ``goldset.services.notifications``). The blinding tests read the list
from here."""

from collections.abc import Iterable

from goldset.rules.labeling import OPEN_FOR_LEAD
from workbench.roles import Role

# Every field that identifies or characterises the system behind an answer.
SYSTEM_FIELDS = frozenset(
    {
        "system",
        "system_id",
        "run",
        "run_id",
        "model",
        "config",
        "prompt_hash",
        "extra",  # an answer's extra metadata: tokens, metrics, the prompt hash
        "latency_ms",
        "cost",
        "cost_usd",
    }
)
# The AnswerRecord columns a blind read never loads (``.defer(*RECORD_SYSTEM_COLUMNS)``).
RECORD_SYSTEM_COLUMNS = ("run_id", "model", "extra", "latency_ms", "cost_usd")

# The roles that see system identity, and who labeled an item beside the label.
SEES_SYSTEMS = frozenset({Role.ADMIN.value})
SEES_LABELERS = frozenset({Role.ADMIN.value})
# While a record waits for a lead, no page shows a lead who gave which label (they adjudicate
# blind); the disagreement list shows the values without names.
LABELERS_HIDDEN_WHILE = OPEN_FOR_LEAD


# A retriever's scores: their scale and spread characterise the retriever (a cosine similarity,
# a BM25 score, a reranker's logit), so they are shown with the system, not to annotators and
# leads, who see the passages retrieved and their ranks (issue 28).
SEES_RETRIEVAL_SCORES = SEES_SYSTEMS


def sees_systems(roles: Iterable[str]) -> bool:
    return bool(SEES_SYSTEMS & set(roles))


def sees_retrieval_scores(roles: Iterable[str]) -> bool:
    return bool(SEES_RETRIEVAL_SCORES & set(roles))


def sees_labelers(roles: Iterable[str]) -> bool:
    return bool(SEES_LABELERS & set(roles))


def without_system_fields(data):
    """``data`` (dicts and lists, nested) with every key in :data:`SYSTEM_FIELDS` removed: for
    payloads that leave the application blind whatever a builder put in them."""
    if isinstance(data, dict):
        return {k: without_system_fields(v) for k, v in data.items() if k not in SYSTEM_FIELDS}
    if isinstance(data, list):
        return [without_system_fields(v) for v in data]
    return data
