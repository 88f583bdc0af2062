"""Authoring pages: the task list, the editor, criteria, world look-ups and the tool playground."""

from django.urls import path

from tasks_app.authoring.views import authoring, editor, playground

app_name = "tasks"

urlpatterns = [
    path("", authoring.task_list_page, name="list"),
    path("new/", editor.task_create_page, name="create"),
    path("criteria/validate/", editor.criterion_validate, name="criterion_validate"),
    path("<int:task_id>/", authoring.task_detail_page, name="detail"),
    path("<int:task_id>/edit/", editor.task_edit_page, name="edit"),
    path("<int:task_id>/submit/", authoring.task_submit, name="submit"),
    path("<int:task_id>/retire/", authoring.task_retire_view, name="retire"),
    path("<int:task_id>/diff/<int:a>/<int:b>/", authoring.task_diff_page, name="diff"),
    path("<int:task_id>/playground/", playground.playground_page, name="playground"),
    path("<int:task_id>/playground/form/", playground.playground_form, name="playground_form"),
    path("<int:task_id>/playground/call/", playground.playground_call, name="playground_call"),
    path("<int:task_id>/playground/record/", playground.playground_record, name="playground_record"),
    path("<int:task_id>/playground/draft/", playground.playground_draft, name="playground_draft"),
    path("<int:task_id>/playground/reset/", playground.playground_reset, name="playground_reset"),
    path("<int:task_id>/playground/run/", playground.playground_run, name="playground_run"),
]
