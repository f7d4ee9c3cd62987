"""Serving a frozen file to a role whose declared fields (``workbench.access``) are fewer than the
file's: the stored bytes are verified first, then each JSON line is reduced to the role's fields
and the people in it are replaced by the gold version's pseudonyms. Streams line by line."""

import json
import re
from collections.abc import Iterator

from django.contrib.auth import get_user_model

from goldset.services.exports import canonical_json
from goldset.services.pseudonyms import PREFIX, ensure_pseudonyms, gold_version_scope
from workbench.access import project

_LEGACY_REVIEWER = re.compile(r"^reviewer-(\d+)$")  # files frozen before pseudonyms existed


class VersionPseudonyms:
    """Maps whatever names a person in a version's files (a username, a legacy ``reviewer-<pk>``,
    or an existing pseudonym) to the version's pseudonym, creating it on first use."""

    def __init__(self, version_number: int):
        self.scope = gold_version_scope(version_number)
        self.memo: dict[str, str] = {}

    def __call__(self, value):
        if value is None or (isinstance(value, str) and value.startswith(PREFIX)):
            return value
        key = str(value)
        if key not in self.memo:
            legacy = _LEGACY_REVIEWER.match(key)
            User = get_user_model()
            user_id = (
                int(legacy.group(1))
                if legacy
                else User.objects.filter(username=key).values_list("pk", flat=True).first()
            )
            if user_id is None or not User.objects.filter(pk=user_id).exists():
                self.memo[key] = "person-unknown"
            else:
                self.memo[key] = ensure_pseudonyms(scope=self.scope, user_ids=[user_id])[user_id]
        return self.memo[key]


def project_jsonl(chunks: Iterator[bytes], *, spec, version_number: int) -> Iterator[bytes]:
    """Each JSON line of ``chunks`` reduced to ``spec``; canonical JSON out."""
    pseudonym = VersionPseudonyms(version_number)
    pending = b""
    for chunk in chunks:
        pending += chunk
        *lines, pending = pending.split(b"\n")
        out = [
            canonical_json(project(json.loads(line), spec, pseudonym=pseudonym))
            for line in lines
            if line.strip()
        ]
        if out:
            yield ("\n".join(out) + "\n").encode("utf-8")
    if pending.strip():
        line = canonical_json(project(json.loads(pending), spec, pseudonym=pseudonym))
        yield (line + "\n").encode("utf-8")
