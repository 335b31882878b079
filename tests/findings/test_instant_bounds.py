"""A date with an offset that carries it past what a datetime holds (9999-12-31T23:59:59-12:00 is year 10000 in
UTC) is a 400 naming the parameter on the API and a message on the graph page, never a 500."""

from __future__ import annotations

import pytest
from rest_framework.exceptions import ValidationError

from findings.api import instant_parse
from findings.models import Entity
from tests.findings.graph_seed import graph_seed

pytestmark = pytest.mark.django_db

OUT_OF_RANGE = ["9999-12-31T23:59:59-12:00", "0001-01-01T00:00:00+14:00"]


@pytest.mark.parametrize("raw", OUT_OF_RANGE)
def test_instant_parse_refuses_an_instant_outside_the_datetime_range(raw):
    with pytest.raises(ValidationError) as refused:
        instant_parse(raw, "as_of")
    assert "as_of" in refused.value.detail


@pytest.mark.parametrize("raw", OUT_OF_RANGE)
def test_graph_api_and_page_answer_an_out_of_range_as_of_without_a_500(world, relations, client, raw):
    graph_seed(world)
    marcus = Entity.objects.get(tenant=world.acme, name="Marcus Lee")
    api = world.client(world.member).get(f"/api/v1/entities/{marcus.pk}/graph", {"as_of": raw})
    assert api.status_code == 400 and "as_of" in api.json()
    listed = world.client(world.member).get("/api/v1/findings", {"valid_at": raw})
    assert listed.status_code == 400 and "valid_at" in listed.json()
    client.force_login(world.member)
    page = client.get(f"/t/acme/findings/entities/{marcus.pk}/graph/", {"as_of": raw})
    assert page.status_code == 400  # the page with its message
    assert "as_of" in page.content.decode()
