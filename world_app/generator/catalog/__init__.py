"""The catalogue: products of every category (fictional brands, specs valid per ``world_app.specs``),
bundles of products sold together, and the compatibility rules between parts.
"""

from __future__ import annotations

from world_app.generator.catalog.build import build_catalog
from world_app.generator.catalog.compatibility import compatibility_rules
from world_app.generator.catalog.drafts import Catalog

__all__ = ["Catalog", "build_catalog", "compatibility_rules"]
