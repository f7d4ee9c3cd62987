"""The cap on free text (rationales, comments, discussion messages, questions and answers):
``FREE_TEXT_MAX_CHARS`` characters (default 20,000), enforced here so every path — form, import,
command, API — is held to it."""

from django.conf import settings

from goldset.exceptions import GoldsetError


class TextTooLong(GoldsetError):
    def __init__(self, field: str, length: int, limit: int):
        super().__init__(f"{field}: {length:,} characters; at most {limit:,} are allowed.")
        self.field = field


def check_text_length(field: str, value: str | None) -> None:
    limit = settings.FREE_TEXT_MAX_CHARS
    if value and len(value) > limit:
        raise TextTooLong(field, len(value), limit)
