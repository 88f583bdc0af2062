"""Release pages: choose, preview and freeze releases, compare them, exports."""

from django.urls import path

from trainer_bridge import views

app_name = "releases"

urlpatterns = [
    path("", views.release_list_page, name="list"),
    path("new/", views.release_new, name="new"),
    path("compare/", views.release_compare_page, name="compare"),
    path("exports/<int:job_id>/download/", views.export_download, name="export-download"),
    path("<slug:slug>/", views.release_detail, name="detail"),
    path("<slug:slug>/edit/", views.release_edit, name="edit"),
    path("<slug:slug>/freeze/", views.release_freeze, name="freeze"),
    path("<slug:slug>/delete/", views.release_delete, name="delete"),
    path("<slug:slug>/exports/", views.release_exports, name="exports"),
    path("<slug:slug>/exports/new/", views.release_export, name="export"),
]
