"""Calibration pages: model endpoints, runs with live progress, task results, trajectories, judge labels."""

from django.urls import path

from tasks_app.calibration.views import labels, registry, results, runs

app_name = "calibration"

urlpatterns = [
    path("", runs.runs, name="runs"),
    path("runs/new/", runs.run_create, name="run_create"),
    path("runs/<int:run_id>/", runs.run_page, name="run"),
    path("runs/<int:run_id>/progress/", runs.run_progress_partial, name="run_progress"),
    path("runs/<int:run_id>/cancel/", runs.run_cancel, name="run_cancel"),
    path("runs/<int:run_id>/resume/", runs.run_resume, name="run_resume"),
    path("endpoints/", registry.endpoints, name="endpoints"),
    path("endpoints/new/", registry.endpoint_edit, name="endpoint_create"),
    path("endpoints/<int:endpoint_id>/edit/", registry.endpoint_edit, name="endpoint_edit"),
    path("endpoints/<int:endpoint_id>/test/", registry.endpoint_test, name="endpoint_test"),
    path("judges/new/", registry.judge_edit, name="judge_create"),
    path("judges/<int:judge_id>/edit/", registry.judge_edit, name="judge_edit"),
    path("tasks/<int:task_id>/", results.task_page, name="task"),
    path("rollouts/<int:rollout_id>/", results.rollout_page, name="rollout"),
    path("labels/", labels.labels, name="labels"),
    path("labels/<int:verdict_id>/", labels.label_verdict, name="label"),
    path("agreement/", labels.agreement, name="agreement"),
]
