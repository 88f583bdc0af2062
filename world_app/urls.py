from django.urls import path

from world_app import views

app_name = "world"

urlpatterns = [
    path("tools/", views.tools_page, name="tools"),
]
