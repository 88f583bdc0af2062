"""The world factories make rows the models accept: tests that use them start from a valid world."""

import pytest

from tests.factories import SPECS_BY_CATEGORY, ProductFactory, small_world
from world_app.models import WORLD_MODELS


@pytest.mark.django_db
def test_small_world_has_a_valid_row_in_every_world_table():
    rows = small_world()
    for row in rows.values():
        row.refresh_from_db()
        row.full_clean()  # raises ValidationError naming the field
    assert [model.__name__ for model in WORLD_MODELS if not model._base_manager.exists()] == []


@pytest.mark.django_db
@pytest.mark.parametrize("category", sorted(SPECS_BY_CATEGORY))
def test_products_of_every_category_have_valid_specs(category):
    ProductFactory(category=category).full_clean()
