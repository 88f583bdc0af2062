"""Calibration pages, thin: each view checks access, reads through the selectors, writes through the services.

``registry`` (model endpoints and judge configurations), ``runs`` (runs with live progress), ``results`` (a task's
calibration and the trajectory page), ``labels`` (the judge against humans). Charts are inline SVG whose geometry
``tasks_app.calibration.charts`` computes; no JS library.
"""

from corecraft_site.refusals import forbidden_as_page as refusal_page

PAGE_SIZE = 25

# A refusal (from a check here or a service) renders the 403 page with its reason, never a 500.
forbidden_as_page = refusal_page(page="calibration/forbidden.html")
