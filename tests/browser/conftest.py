"""Playwright (sync API) against pytest-django's live server, driving Debian's chromium.

Playwright's sync API runs an event loop in the test thread, so Django's async-safety check would refuse the
ORM calls the tests make around it: it is lifted while a browser runs, and only then. The suite orders browser
tests last (tests/conftest.py), so no other test runs beside that loop.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(os.environ.get("BROWSER_SCREENSHOTS", tempfile.gettempdir()))


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed at /usr/bin/chromium (run `make browser`)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
            yield browser
            browser.close()
    finally:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


@pytest.fixture
def screenshot(page):
    def take(name: str) -> Path:
        path = SCREENSHOTS / f"corecraft_{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take
