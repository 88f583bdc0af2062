"""The episode and tool API, version 1 (mounted at /api/)."""

from django.urls import path

from world_app.api import views, views_episodes, views_tools

app_name = "api"

urlpatterns = [
    path("v1/snapshots/", views.SnapshotListApi.as_view(), name="snapshot-list"),
    path("v1/snapshots/<str:version>/", views.SnapshotDetailApi.as_view(), name="snapshot-detail"),
    path("v1/episodes/", views_episodes.EpisodeCreateApi.as_view(), name="episode-list"),
    path("v1/episodes/<str:episode_id>/", views_episodes.EpisodeDetailApi.as_view(), name="episode-detail"),
    path("v1/episodes/<str:episode_id>/steps/", views_episodes.EpisodeStepListApi.as_view(), name="episode-steps"),
    path("v1/episodes/<str:episode_id>/diff/", views_episodes.EpisodeDiffApi.as_view(), name="episode-diff"),
    path(
        "v1/episodes/<str:episode_id>/state-checksum/",
        views_episodes.EpisodeStateChecksumApi.as_view(),
        name="episode-state-checksum",
    ),
    path("v1/episodes/<str:episode_id>/close/", views_episodes.EpisodeCloseApi.as_view(), name="episode-close"),
    path(
        "v1/episodes/<str:episode_id>/tools/<str:name>/",
        views_tools.EpisodeToolCallApi.as_view(),
        name="episode-tool-call",
    ),
    path("v1/tools/", views_tools.ToolListApi.as_view(), name="tool-list"),
    path("v1/tools/<str:name>/", views_tools.ToolDetailApi.as_view(), name="tool-detail"),
]
