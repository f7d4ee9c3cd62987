from django.contrib import admin

from goldset.models import Block, BlockVersion, Document, Domain


@admin.register(Domain)
class DomainAdmin(admin.ModelAdmin):
    list_display = ["slug", "name"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["document_id", "title", "domain", "authority"]
    list_filter = ["domain"]
    search_fields = ["document_id", "title"]


@admin.register(Block)
class BlockAdmin(admin.ModelAdmin):
    list_display = ["block_id", "document"]
    search_fields = ["block_id"]
    list_select_related = ["document"]


@admin.register(BlockVersion)
class BlockVersionAdmin(admin.ModelAdmin):
    """Read-only: versions are append-only and come from imports."""

    list_display = ["block", "version", "effective_from", "effective_to", "sha256"]
    list_select_related = ["block"]

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
