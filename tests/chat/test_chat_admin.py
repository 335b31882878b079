"""The admin lists gap events by frequency ("interview next") and opens the chat models read-only."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from chat.gate import GapKind
from chat.models import GapEvent
from chat.services import gap_event_record

pytestmark = pytest.mark.django_db


def test_gap_events_listed_by_frequency(world):
    authority = world.authority(world.member)
    gap_event_record(authority, kind=GapKind.KNOWLEDGE_MISSING, question="cafeteria menu")
    for _ in range(3):
        gap_event_record(authority, kind=GapKind.KNOWLEDGE_MISSING, question="visitor parking policy")
    staff = get_user_model().objects.create_superuser("root", "root@example.test", "pw-for-tests-only")
    client = Client()
    client.force_login(staff)
    page = client.get("/admin/chat/gapevent/").content.decode()
    assert page.index("visitor park policy") < page.index("cafeteria menu")
    for name in ("conversation", "message", "answercache", "accessrequest"):
        assert client.get(f"/admin/chat/{name}/").status_code == 200


def test_a_gap_event_opens_with_every_field_read_only_even_for_an_operator(world):
    authority = world.authority(world.member)
    gap_event_record(authority, kind=GapKind.KNOWLEDGE_MISSING, question="visitor parking policy")
    event = GapEvent.objects.get()
    staff = get_user_model().objects.create_superuser("root", "root@example.test", "pw-for-tests-only")
    client = Client()
    client.force_login(staff)
    page = client.get(f"/admin/chat/gapevent/{event.pk}/change/")
    assert page.status_code == 200
    assert set(page.context["adminform"].readonly_fields) == {
        "tenant", "kind", "canonical", "example", "cause", "count", "first_seen", "last_seen"}
    assert not page.context["adminform"].form.fields
