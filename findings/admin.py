from __future__ import annotations

from django import forms
from django.contrib import admin

from .models import RelationType


class LinesField(forms.CharField):
    """A JSON list of strings edited as one item per line; blank lines dropped, items lower-cased and
    de-duplicated in order, because the patterns extractor matches phrasings case-insensitively."""

    widget = forms.Textarea(attrs={"rows": 6, "cols": 60})

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("required", False)
        super().__init__(strip=False, **kwargs)

    def prepare_value(self, value):
        if isinstance(value, list):
            return "\n".join(str(item) for item in value)
        return value

    def to_python(self, value) -> list[str]:
        items: list[str] = []
        for line in (value or "").splitlines():
            item = " ".join(line.split()).lower()
            if item and item not in items:
                items.append(item)
        return items


class RelationTypeForm(forms.ModelForm):
    phrasings = LinesField(help_text="One trigger phrase per line, e.g. “took over as”.")
    subject_kinds = LinesField(help_text="Optional, one kind per line.")
    object_kinds = LinesField(help_text="Optional, one kind per line; “value” allows literal objects.")

    class Meta:
        model = RelationType
        fields = ("name", "policy", "description", "phrasings", "subject_kinds", "object_kinds")


@admin.register(RelationType)
class RelationTypeAdmin(admin.ModelAdmin):
    form = RelationTypeForm
    list_display = ("name", "policy", "description", "updated_at")
    list_filter = ("policy",)
    search_fields = ("name", "description")
    ordering = ("name",)
