"""Writes of authoring and review: tasks and versions, reviews and comments, bulk decisions, reference runs."""
