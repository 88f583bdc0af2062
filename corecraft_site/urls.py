"""The project's URL map: the apps' pages and APIs are included by module name, so the project imports no app."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from corecraft_site import views

urlpatterns = [
    path("", include("world_app.home_urls")),
    path("healthz", views.healthz, name="healthz"),
    path("accounts/login/", views.ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("world/", include("world_app.urls")),
    path("tasks/", include("tasks_app.authoring.urls")),
    path("review/", include("tasks_app.authoring.review_urls")),
    path("calibration/", include("tasks_app.calibration.urls")),
    path("releases/", include("trainer_bridge.urls")),
    path("dashboard/", include("trainer_bridge.dashboard_urls")),
    path("api/", include("world_app.api.urls")),
    path("api/v1/", include("trainer_bridge.api_urls")),
    path("api/v1/", include("trainer_bridge.trainer_api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
