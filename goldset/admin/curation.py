"""Read-only admin views of curation data: every change goes through the services (audited)."""

from django.contrib import admin

from goldset.models import (
    Customer,
    CustomerPermission,
    QualityTrackerEntry,
    Review,
    SpotCheckDraw,
    Triple,
    TripleRevision,
    WorkingSlice,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class PermissionInline(admin.TabularInline):
    model = CustomerPermission
    fields = ["granted_at", "granted_by", "note", "revoked_at", "revoked_by", "revocation_note"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Customer)
class CustomerAdmin(ReadOnlyAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    inlines = [PermissionInline]


@admin.register(Triple)
class TripleAdmin(ReadOnlyAdmin):
    list_display = ["external_id", "state", "tier", "routing_rule", "source", "domain", "author"]
    list_filter = ["state", "tier", "source", "domain"]
    search_fields = ["external_id"]
    list_select_related = ["domain", "author"]


@admin.register(TripleRevision)
class TripleRevisionAdmin(ReadOnlyAdmin):
    list_display = [
        "triple",
        "number",
        "expected_block_version",
        "reviewers_needed",
        "assigned_count",
    ]
    list_select_related = ["triple", "expected_block_version__block"]


@admin.register(Review)
class ReviewAdmin(ReadOnlyAdmin):
    list_display = ["revision", "reviewer", "verdict", "disagreement_category", "submitted_at"]
    list_filter = ["verdict", "disagreement_category", "spot_check"]
    list_select_related = ["revision", "reviewer"]


@admin.register(QualityTrackerEntry)
class QualityTrackerEntryAdmin(ReadOnlyAdmin):
    list_display = ["triple", "author", "created_at"]
    list_select_related = ["triple", "author"]


@admin.register(SpotCheckDraw)
class SpotCheckDrawAdmin(ReadOnlyAdmin):
    list_display = ["iso_year", "iso_week", "seed", "drawn_at"]


@admin.register(WorkingSlice)
class WorkingSliceAdmin(ReadOnlyAdmin):
    list_display = ["quarter", "seed", "size", "gold_count", "drawn_at"]
