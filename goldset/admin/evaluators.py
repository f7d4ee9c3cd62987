from django.contrib import admin

from goldset.models import Evaluator, EvaluatorOutput, PcsCalibration


@admin.register(Evaluator)
class EvaluatorAdmin(admin.ModelAdmin):
    """Outputs are imported through /evaluators/<id>/ or ``manage.py import_evaluator_outputs``
    (validated all or nothing), never edited here."""

    list_display = ["name", "version", "kind", "model_id", "prompt_hash", "created_at"]
    list_filter = ["kind"]
    search_fields = ["name", "model_id"]


@admin.register(EvaluatorOutput)
class EvaluatorOutputAdmin(admin.ModelAdmin):
    list_display = ["evaluator", "record", "score", "unsafe_probability"]
    list_select_related = ["evaluator", "record"]
    readonly_fields = [f.name for f in EvaluatorOutput._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(PcsCalibration)
class PcsCalibrationAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "status", "progress", "created_at", "finished_at"]
    list_filter = ["status"]
    readonly_fields = [f.name for f in PcsCalibration._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
