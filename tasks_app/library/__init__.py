"""The starter library: fixture tasks and task families loaded through the gate, their statistics, rubric
hardening and near-duplicate detection. The top room of tasks_app: it loads tasks through authoring's services and
checks them with calibration's gate."""
