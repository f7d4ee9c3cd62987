from django.contrib import admin

from goldset.models import GoldVersion, ScoringJob


@admin.register(GoldVersion)
class GoldVersionAdmin(admin.ModelAdmin):
    """Read-only: versions are frozen through the freeze page or ``manage.py freeze_gold``."""

    list_display = ["number", "row_count", "parent", "created_by", "created_at", "rows_sha256"]
    list_select_related = ["parent", "created_by"]
    readonly_fields = [f.name for f in GoldVersion._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ScoringJob)
class ScoringJobAdmin(admin.ModelAdmin):
    list_display = ["pk", "name", "version", "kind", "status", "progress", "attempts", "worker"]
    list_filter = ["status", "kind"]
    list_select_related = ["version"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
