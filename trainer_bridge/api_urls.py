"""The export API under /api/v1/: frozen releases, manifests, rows and export files."""

from django.urls import path

from trainer_bridge.api import release_tools
from trainer_bridge.api import releases as views

app_name = "trainer_api"

urlpatterns = [
    path("releases/", views.ReleaseListApi.as_view(), name="release-list"),
    path("releases/<slug:slug>/", views.ReleaseDetailApi.as_view(), name="release-detail"),
    path("releases/<slug:slug>/rows/", views.ReleaseRowListApi.as_view(), name="release-rows"),
    path("releases/<slug:slug>/rows.jsonl", views.ReleaseRowStreamApi.as_view(), name="release-rows-jsonl"),
    path("releases/<slug:slug>/tools/<str:sha256>", release_tools.ReleaseToolSetApi.as_view(), name="release-tools"),
    path("releases/<slug:slug>/exports/<str:format>", views.ReleaseExportApi.as_view(), name="release-export"),
    path("exports/<int:job_id>/", views.ExportJobDetailApi.as_view(), name="export-job"),
    path("exports/<int:job_id>/download/", views.ExportJobDownloadApi.as_view(), name="export-download"),
    path("exports/<int:job_id>/tools/", release_tools.ExportJobToolsApi.as_view(), name="export-tools"),
]
