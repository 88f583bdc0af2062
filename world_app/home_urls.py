"""The home page, at the site's root (the world at a glance)."""

from django.urls import path

from world_app import views

urlpatterns = [path("", views.home, name="home")]
