"""Writes of calibration: runs and their items (calibration.py), the red team's stored gates (gates.py)."""
