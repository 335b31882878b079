from django.contrib import admin

from .models import RelationType


@admin.register(RelationType)
class RelationTypeAdmin(admin.ModelAdmin):
    list_display = ("name", "policy", "description", "updated_at")
    list_filter = ("policy",)
    search_fields = ("name", "description")
    fields = ("name", "policy", "description", "phrasings", "subject_kinds", "object_kinds")
    ordering = ("name",)
