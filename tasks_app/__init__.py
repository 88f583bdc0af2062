"""Training tasks: tasks and their versions with their rubric criteria, review, the playground and reference runs,
rollouts and calibration, the starter library and its families, perturbations and the red-team gate. Above the
judgement (``rubrics_app``) and the world; below ``trainer_bridge``."""
