"""Writes and figures of the starter library: loading it (task_library.py), measuring it (library_stats.py)."""
