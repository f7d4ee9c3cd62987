"""Django admin for answer labeling. Admin-only by construction (Django admin needs staff, and
only admins are staff), so systems, runs and who labeled what may appear here."""

from django.contrib import admin

from goldset.models import (
    Adjudication,
    AnswerRecord,
    CalibrationResult,
    Label,
    Question,
    Run,
    System,
)
from workbench.roles import Role, has_role


class AdminRoleMixin:
    """The admin role (a group) may view these without per-model permissions."""

    def has_module_permission(self, request):
        return has_role(request.user, Role.ADMIN) or super().has_module_permission(request)

    def has_view_permission(self, request, obj=None):
        return has_role(request.user, Role.ADMIN) or super().has_view_permission(request, obj)


class ReadOnlyAdmin(AdminRoleMixin, admin.ModelAdmin):
    """Labels, records and results change only through the services (rules, locks, audit log)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(System)
class SystemAdmin(AdminRoleMixin, admin.ModelAdmin):
    list_display = ["system_id", "created_at"]
    search_fields = ["system_id"]


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ["run_id", "system", "source_name", "imported_at"]
    list_select_related = ["system"]
    search_fields = ["run_id", "system__system_id"]


@admin.register(Question)
class QuestionAdmin(ReadOnlyAdmin):
    list_display = ["question_id", "domain", "task_family", "task_type", "conflict_flag"]
    list_filter = ["domain", "task_type", "conflict_flag", "freshness_flag"]
    search_fields = ["question_id", "text"]


class LabelInline(admin.TabularInline):
    model = Label
    fields = [
        "annotator",
        "acceptability",
        "grounding",
        "severe_safety",
        "primary_failure",
        "rationale",
    ]
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(AnswerRecord)
class AnswerRecordAdmin(ReadOnlyAdmin):
    list_display = ["public_id", "run", "question", "tier", "status", "final_acceptability"]
    list_filter = ["status", "tier", "is_calibration", "in_audit_sample"]
    list_select_related = ["run", "question"]
    search_fields = ["public_id", "question__question_id", "run__run_id"]
    inlines = [LabelInline]


@admin.register(Adjudication)
class AdjudicationAdmin(ReadOnlyAdmin):
    list_display = ["record", "lead", "reason", "acceptability", "grounding", "created_at"]
    list_select_related = ["record", "lead"]


@admin.register(CalibrationResult)
class CalibrationResultAdmin(ReadOnlyAdmin):
    list_display = ["annotator", "domain", "kappa_grounding", "kappa_severe_safety", "passed"]
    list_select_related = ["annotator", "domain"]
