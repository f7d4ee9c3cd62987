"""The API's JSON parser: a malformed or over-deep body is a 400 problem, never a 500.

Python's JSON decoder recurses once per nesting level, so a body of 100,000 nested ``[`` used to
end in ``RecursionError`` (a 500 in HTML). A body deeper than ``JSON_MAX_DEPTH`` is refused even
when it parses, since serializers, ``json.dumps`` and the database driver recurse over it again,
deeper in the stack. Every JSON endpoint parses through this class (``DEFAULT_PARSER_CLASSES``,
and the endpoints that list their parsers): one home for the rule. Its own module, as
:mod:`goldset.views.api_access`: DRF imports its default parser while its views module loads.
"""

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

# No request body of the API nests deeper than a few levels (a run line is an object in a list).
JSON_MAX_DEPTH = 64


def json_depth_exceeds(value, limit: int) -> bool:
    """Whether ``value`` (parsed JSON) nests lists and objects more than ``limit`` deep. Iterative:
    it never recurses, whatever the depth."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


class DepthLimitedJSONParser(JSONParser):
    """DRF's JSON parser with a nesting limit: 400 (``ParseError``) beyond ``JSON_MAX_DEPTH``."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError(self._too_deep()) from exc
        if json_depth_exceeds(data, JSON_MAX_DEPTH):
            raise ParseError(self._too_deep())
        return data

    @staticmethod
    def _too_deep() -> str:
        return f"JSON parse error - the body nests more than {JSON_MAX_DEPTH} levels deep."
