import pytest


@pytest.fixture(autouse=True)
def _world_clock(settings):
    """Every test sees the port's fixed world clock, whatever the environment says."""
    from datetime import datetime

    settings.WORLD_NOW = datetime.fromisoformat("2025-09-15T14:00:00-05:00")
