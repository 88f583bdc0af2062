import pytest

from tests.world_app.tools.shop import build_shop


@pytest.fixture
def shop(db):
    """A small shop (see ``shop.build_shop``) in the test database."""
    return build_shop()
