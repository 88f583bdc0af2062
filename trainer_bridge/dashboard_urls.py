"""The lead's dashboard, at ``/dashboard/``."""

from django.urls import path

from trainer_bridge import views

urlpatterns = [path("", views.lead_dashboard_page, name="dashboard")]
