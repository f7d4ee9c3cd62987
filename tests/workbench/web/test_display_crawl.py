"""Every page each role reaches on the seeded demo speaks in display names: no Python repr
(``{Tier.GOLD: 2}``, ``<Tier.GOLD: …>``), no raw protocol code (``tier_b``, ``answer_not_entailed``,
``pending_review``), no bare ``True``/``False`` and no internal reference (``DESIGN §7``,
``seed 003``) in the visible text. Attributes, URLs, ``<code>`` and downloads may keep codes."""

import re
from html.parser import HTMLParser

from django.contrib.auth import get_user_model
from django.test import Client

from goldset.models.projects import DEFAULT_PROJECT_SLUG, default_project_id
from goldset.rules.display import DISPLAY
from tests.workbench.web.test_blinding_crawl import _crawl
from workbench.access import ACCESS, Kind
from workbench.roles import roles_in

# Codes that contain an underscore never occur in prose: any of them in visible text is a leak.
RAW_CODES = sorted(code for code in DISPLAY if "_" in code)
RAW = re.compile(r"(?<![\w./-])(" + "|".join(map(re.escape, RAW_CODES)) + r")(?![\w/-])")
REPR = re.compile(r"\{\s*\w+\.\w+\s*:|<\w+\.\w+: |\b(?:Tier|TripleState|Verdict|Flag)\.[A-Z_]+\b")
BOOL = re.compile(r"(?<![\w\"'])(True|False)(?![\w\"'])|^[ \t]*None[ \t]*$", re.MULTILINE)
INTERNAL = re.compile(r"DESIGN(?:\.md)? ?§|\bseed 0\d\d\b")


class _Text(HTMLParser):
    """Visible text only: no tags, attributes, scripts, styles, <code>, <pre> or <textarea>."""

    HIDDEN = {"script", "style", "code", "pre", "textarea"}

    def __init__(self):
        super().__init__()
        self.parts, self.hidden = [], 0

    def handle_starttag(self, tag, attrs):
        self.hidden += tag in self.HIDDEN

    def handle_endtag(self, tag):
        self.hidden -= tag in self.HIDDEN and self.hidden > 0

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(data)


def visible_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return "\n".join(parser.parts)  # a text node a line: a bare "None" is a whole node


def problems(text: str) -> list[str]:
    found = []
    for pattern in (REPR, INTERNAL, RAW, BOOL):
        found += [m.group(0).strip() for m in pattern.finditer(text)]
    return found


def test_the_checker_catches_what_it_must():
    assert problems(visible_text("<p>{Tier.GOLD: 2} needs 2</p>")) == ["{Tier.GOLD:"]
    assert problems(visible_text("<td>tier_b</td><td>True</td>")) == ["tier_b", "True"]
    assert problems(visible_text("<td>None</td><td>None yet.</td>")) == ["None"]
    assert problems(visible_text("<p>see DESIGN §7 and seed 003</p>")) == ["DESIGN §", "seed 003"]
    assert problems(visible_text('<a href="?tier=tier_b">GOLD</a><code>tier_a</code>')) == []


def crawl_problems() -> dict[str, list[str]]:
    """Every page of each demo role (annotator, author, lead, admin) with what it shows wrongly;
    run on the seeded demo by ``tests/goldset/web/test_lead_dashboard_actions.py`` (one seed for
    both checks keeps the suite fast)."""
    seen = {}
    for username in ("ann1", "author", "lead", "admin"):
        user = get_user_model().objects.get(username=username)
        client = Client()
        client.force_login(user)
        roles = roles_in(user, default_project_id())
        for url, (view, body) in _crawl(client, DEFAULT_PROJECT_SLUG, roles).items():
            if ACCESS[view].kind == Kind.DOWNLOAD or not body.lstrip().startswith(("<", "{%")):
                continue
            found = problems(visible_text(body))
            if found:
                seen[f"{username} {url}"] = sorted(set(found))
    return seen
