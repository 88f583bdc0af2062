"""Calibration pages: model endpoints, runs with live progress, task results, trajectories, judge labels."""

from django.urls import path

from tasks_app.calibration import views as calibration

app_name = "calibration"

urlpatterns = [
    path("", calibration.runs, name="runs"),
    path("runs/new/", calibration.run_create, name="run_create"),
    path("runs/<int:run_id>/", calibration.run_page, name="run"),
    path("runs/<int:run_id>/progress/", calibration.run_progress_partial, name="run_progress"),
    path("runs/<int:run_id>/cancel/", calibration.run_cancel, name="run_cancel"),
    path("runs/<int:run_id>/resume/", calibration.run_resume, name="run_resume"),
    path("endpoints/", calibration.endpoints, name="endpoints"),
    path("endpoints/new/", calibration.endpoint_edit, name="endpoint_create"),
    path("endpoints/<int:endpoint_id>/edit/", calibration.endpoint_edit, name="endpoint_edit"),
    path("endpoints/<int:endpoint_id>/test/", calibration.endpoint_test, name="endpoint_test"),
    path("judges/new/", calibration.judge_edit, name="judge_create"),
    path("judges/<int:judge_id>/edit/", calibration.judge_edit, name="judge_edit"),
    path("tasks/<int:task_id>/", calibration.task_page, name="task"),
    path("rollouts/<int:rollout_id>/", calibration.rollout_page, name="rollout"),
    path("labels/", calibration.labels, name="labels"),
    path("labels/<int:verdict_id>/", calibration.label_verdict, name="label"),
    path("agreement/", calibration.agreement, name="agreement"),
]
