"""Pseudonyms that stand for a person in an export: random, stable within one scope (a gold
version, or one export), unrelated between scopes, and never derived from a primary key, so
labels in two exports cannot be joined to each other or back to an account."""

from django.conf import settings
from django.db import models


class Pseudonym(models.Model):
    scope = models.CharField(max_length=64)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    label = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope", "user"], name="pseudonym_unique_user"),
            models.UniqueConstraint(fields=["scope", "label"], name="pseudonym_unique_label"),
        ]

    def __str__(self):
        return f"{self.scope}: {self.label}"
