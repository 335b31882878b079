from django.urls import path

from groundwork.routes import api_collection

from . import api, views

page_urlpatterns = [
    path("findings/", views.findings_list, name="findings"),
    path("findings/<int:claim_id>/", views.claim_detail, name="finding"),
    path("findings/entities/<int:entity_id>/", views.entity_detail, name="entity"),
    path("findings/entities/<int:entity_id>/graph/", views.entity_graph, name="entity-graph"),
]
api_urlpatterns = [
    *api_collection("findings", api.ClaimListApi, "<int:claim_id>", api.ClaimDetailApi,
                    names=("findings", "finding")),
    *api_collection("entities", api.EntityListApi, "<int:entity_id>", api.EntityDetailApi,
                    names=("entities", "entity")),
    path("entities/<int:entity_id>/graph", api.EntityGraphApi.as_view(), name="entity-graph"),
]
