"""Writes and figures of the starter library: reading its files (library_files.py), loading it (task_library.py),
its gates (library_gates.py), measuring it (library_stats.py)."""
