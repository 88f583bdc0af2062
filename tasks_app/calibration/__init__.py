"""Rollouts and calibration: the agent loop and rollout policies, calibration runs and their items, the figures of
a task's calibration (metrics and selectors), the stored gate of the red team, and the calibration pages. Above the
red team (``tasks_app.red_team``, ``tasks_app.perturbations``); below authoring and the library."""
