"""How the findings pages word the ontology: a relation's name is an identifier (`member_of`); people read
"member of"."""

from django import template

register = template.Library()


@register.filter
def predicate_words(name: str) -> str:
    """`member_of` → "member of"."""
    return str(name).replace("_", " ")
