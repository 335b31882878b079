from django.urls import path

from . import api, views

api_urlpatterns = [
    path("findings", api.ClaimListApi.as_view(), name="findings"),
    path("findings/<int:claim_id>", api.ClaimDetailApi.as_view(), name="finding"),
    path("entities", api.EntityListApi.as_view(), name="entities"),
    path("entities/<int:entity_id>", api.EntityDetailApi.as_view(), name="entity"),
]
page_urlpatterns = [
    path("findings/", views.findings_list, name="findings"),
    path("findings/<int:claim_id>/", views.claim_detail, name="finding"),
    path("findings/entities/<int:entity_id>/", views.entity_detail, name="entity"),
]
