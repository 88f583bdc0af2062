"""An expert's walk through the live world: log in, see the world, find a customer's order, fix a product."""

from __future__ import annotations

import json
import re

import pytest

from tasks_app.role_grants import demo_users_ensure
from world_app.models import Customer, Order, Product
from world_app.specs import validate_specs

pytestmark = pytest.mark.browser


def test_author_edits_the_live_world(page, screenshot, live_server, seeded_world):
    from playwright.sync_api import expect

    demo_users_ensure()
    order = Order.objects.filter(line_items__product__category="cpu").select_related("customer").first()
    customer = order.customer
    cpu = Product.objects.filter(category="cpu").order_by("id").first()
    # A unique address: the seeded world has near-duplicate accounts on purpose.
    Customer.objects.filter(pk=customer.pk).update(email="walk.through@corecraft-test.example")

    # Log in with the keyboard only: the username box has focus, Tab to the password, Enter submits.
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    expect(page.get_by_label("Username")).to_be_focused()
    page.keyboard.type("author")
    page.keyboard.press("Tab")
    page.keyboard.type("corecraft-author")
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{live_server.url}/")

    # The home page shows the world's counts, each linking to its admin list.
    expect(page.get_by_role("heading", name="Corecraft Computers world")).to_be_visible()
    customers = page.locator(".stat", has=page.get_by_role("link", name="Customers", exact=True))
    expect(customers.locator(".n")).to_have_text(str(Customer.objects.count()))
    expect(page.get_by_text("2025-09-15 14:00 EST")).to_be_visible()
    screenshot("home")

    # Into the admin; find the customer by email.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Admin").click()
    expect(page.get_by_role("heading", name="Live world")).to_be_visible()
    screenshot("admin_index")
    page.get_by_role("link", name="Customers", exact=True).first.click()
    page.locator("#searchbar").fill("walk.through@corecraft-test.example")
    page.keyboard.press("Enter")
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    page.get_by_role("link", name=customer.pk, exact=True).click()
    expect(page.locator("#id_email")).to_have_value("walk.through@corecraft-test.example")

    # One of their orders, with its line items inline and its totals.
    page.get_by_role("link", name=re.compile(r"^Orders \(\d+\)$")).click()
    page.get_by_role("link", name=order.pk, exact=True).click()
    expect(page.locator("#line_items-group")).to_contain_text(order.line_items.first().product.sku)
    expect(page.locator(".field-total .readonly")).to_have_text(str(order.total))
    screenshot("order")

    # A CPU's specs made invalid for its category: refused on the field, the input kept.
    page.goto(f"/admin/world_app/product/?q={cpu.sku}")
    page.get_by_role("link", name=cpu.pk, exact=True).click()
    bad = json.dumps({**cpu.specs, "socket": "AM9"}, indent=2)
    page.locator("#id_specs").fill(bad)
    page.get_by_role("button", name="Save", exact=True).first.click()
    expect(page.locator(".errornote")).to_be_visible()
    expect(page.locator(".field-specs .errorlist")).to_contain_text("socket")
    expect(page.locator("#id_specs")).to_have_value(re.compile('"socket": "AM9"'))
    screenshot("product_error")

    # Fixed and saved.
    fixed = validate_specs("cpu", {**cpu.specs, "socket": "AM5"})
    page.locator("#id_specs").fill(json.dumps(fixed, indent=2))
    page.get_by_role("button", name="Save", exact=True).first.click()
    expect(page.locator(".messagelist .success")).to_contain_text("was changed successfully")
    assert Product.objects.get(pk=cpu.pk).specs["socket"] == "AM5"
    screenshot("product_saved")

    # Log out (a POST from the admin's header), and the world is closed again.
    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(re.compile(r"/accounts/login/$"))
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
