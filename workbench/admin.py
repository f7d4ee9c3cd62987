from django.contrib import admin

from workbench.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "actor", "verb", "object_type", "object_id", "request_id"]
    list_filter = ["verb", "object_type"]
    search_fields = ["object_id", "request_id", "actor__username"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


# The admin's login page offers the identity provider and hides the password form when local
# passwords are off (the backend refuses a posted password either way).
admin.site.login_template = "admin/workbench_login.html"
