from django.apps import AppConfig


class GoldsetConfig(AppConfig):
    name = "goldset"
    verbose_name = "Gold set"
