"""Roles, their permissions, the demo users, and the login and logout pages."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import CommandError, call_command
from django.core.management.sql import emit_post_migrate_signal
from django.urls import reverse

from corecraft_site.roles import ADMIN, AUTHOR, REVIEWER
from tasks_app.role_grants import DEMO_LOGINS, demo_users_ensure, role_permissions_sync
from tests.world_app.admin_fixtures import CPU_SPECS, form_data, small_world
from world_app.models import WORLD_MODELS, Product

User = get_user_model()


def codenames(role: str) -> set[str]:
    return set(Group.objects.get(name=role).permissions.values_list("codename", flat=True))


def user_in(role: str, username: str | None = None) -> User:
    user = User.objects.create_user(username=username or f"{role}-user", password="pw-123456", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    return user


@pytest.fixture
def world(db):
    return small_world()


# --- The permission matrix ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_migrate_gave_the_groups_their_permissions():
    author, reviewer, admin = codenames(AUTHOR), codenames(REVIEWER), codenames(ADMIN)
    for model in WORLD_MODELS:
        name = model._meta.model_name
        assert {f"view_{name}", f"add_{name}", f"change_{name}"} <= author
        assert f"delete_{name}" not in author
        assert f"view_{name}" in reviewer
        assert not {f"add_{name}", f"change_{name}", f"delete_{name}"} & reviewer
    assert {"view_worldsnapshot", "open_episode"} <= author & reviewer
    assert "add_worldsnapshot" not in author
    # In the admin, authors and reviewers hold the live world only: never tasks, rubrics, judge configurations,
    # endpoints, tokens, releases, or anyone's episodes; and no scope of the API with their session.
    world_codes = {code for model in WORLD_MODELS for code in (f"view_{model._meta.model_name}",
                   f"add_{model._meta.model_name}", f"change_{model._meta.model_name}")}  # fmt: skip
    assert author - world_codes == {"view_worldsnapshot", "open_episode"}
    assert reviewer - world_codes == {"view_worldsnapshot", "open_episode"}
    assert {"read_holdout", "drive_any_episode", "scope_train_read", "scope_reward"} <= admin
    assert admin == set(Permission.objects.values_list("codename", flat=True))


@pytest.mark.django_db
def test_role_permissions_sync_is_idempotent_and_repairs_drift():
    first = role_permissions_sync()
    assert role_permissions_sync() == first
    group = Group.objects.get(name=AUTHOR)
    group.permissions.add(Permission.objects.get(codename="delete_product"))
    group.permissions.remove(Permission.objects.get(codename="change_order"))
    role_permissions_sync()
    assert "delete_product" not in codenames(AUTHOR)
    assert "change_order" in codenames(AUTHOR)


@pytest.mark.django_db
def test_post_migrate_sets_the_permissions_up():
    Group.objects.get(name=REVIEWER).delete()
    Group.objects.get(name=AUTHOR).permissions.clear()
    emit_post_migrate_signal(verbosity=0, interactive=False, db="default")
    assert "view_customer" in codenames(REVIEWER)
    assert "change_customer" in codenames(AUTHOR)


def test_author_can_change_a_product_but_not_delete_it(client, world):
    client.force_login(user_in(AUTHOR))
    url = reverse("admin:world_app_product_change", args=[world.cpu.pk])
    page = client.get(url)
    assert page.status_code == 200
    data = form_data(page.content.decode(), form_id="product_form")
    data.update(specs=json.dumps({**CPU_SPECS, "cores": 16, "threads": 32}), _save="Save")
    assert client.post(url, data).status_code == 302
    world.cpu.refresh_from_db()
    assert world.cpu.specs["cores"] == 16
    assert client.get(reverse("admin:world_app_product_delete", args=[world.cpu.pk])).status_code == 403
    assert (
        client.post(reverse("admin:world_app_product_delete", args=[world.cpu.pk]), {"post": "yes"}).status_code == 403
    )
    assert Product.objects.filter(pk=world.cpu.pk).exists()


def test_reviewer_can_view_but_not_change(client, world):
    client.force_login(user_in(REVIEWER))
    assert client.get(reverse("admin:world_app_order_changelist")).status_code == 200
    url = reverse("admin:world_app_product_change", args=[world.cpu.pk])
    page = client.get(url)
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()
    assert client.post(url, {"name": "renamed"}).status_code == 403
    assert client.get(reverse("admin:world_app_product_add")).status_code == 403
    world.cpu.refresh_from_db()
    assert world.cpu.name == "Ryzen 7 7700"


def test_only_admins_publish_snapshots(client, world):
    client.force_login(user_in(AUTHOR))
    assert client.get(reverse("admin:world_app_worldsnapshot_publish")).status_code == 403
    assert (
        reverse("admin:world_app_worldsnapshot_publish")
        not in client.get(reverse("admin:world_app_worldsnapshot_changelist")).content.decode()
    )


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/", "/admin/", "/admin/world_app/product/"])
def test_anonymous_is_sent_to_a_login_page(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert "login" in response["Location"]
    assert "next=" in response["Location"]


# --- Demo users ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_create_demo_users_is_idempotent(settings):
    settings.DEBUG = True  # the demo runs with DEBUG on; pytest-django turns it off
    out = StringIO()
    call_command("create_demo_users", stdout=out)
    assert "DEMO CREDENTIALS" in out.getvalue()
    assert out.getvalue().count("created") == 3
    snapshot = list(User.objects.order_by("username").values_list("username", "password", "is_staff", "is_superuser"))
    out = StringIO()
    call_command("create_demo_users", stdout=out)
    assert out.getvalue().count("unchanged") == 3
    assert list(User.objects.order_by("username").values_list("username", "password", "is_staff", "is_superuser")) == (
        snapshot
    )
    for login in DEMO_LOGINS:
        user = User.objects.get(username=login.username)
        assert user.check_password(login.password)
        assert list(user.groups.values_list("name", flat=True)) == [login.role]
        assert user.is_staff
    assert User.objects.get(username="admin").is_superuser
    assert not User.objects.get(username="author").is_superuser


@pytest.mark.django_db
def test_demo_users_are_repaired_when_changed():
    demo_users_ensure()
    author = User.objects.get(username="author")
    author.set_password("something-else")
    author.is_staff = False
    author.save()
    author.groups.clear()
    outcome = dict((login.username, what) for login, what in demo_users_ensure())
    assert outcome == {"author": "updated", "reviewer": "unchanged", "admin": "unchanged"}
    author.refresh_from_db()
    assert author.check_password("corecraft-author") and author.is_staff
    assert author.groups.filter(name=AUTHOR).exists()


@pytest.mark.django_db
def test_print_only_changes_nothing():
    out = StringIO()
    call_command("create_demo_users", "--print-only", stdout=out)
    text = out.getvalue()
    assert "DEMO CREDENTIALS" in text
    for login in DEMO_LOGINS:
        assert login.username in text and login.password in text
    assert not User.objects.exists()


@pytest.mark.django_db
def test_demo_users_are_refused_with_debug_off(settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="DEBUG is off"):
        call_command("create_demo_users", stdout=StringIO())
    assert not User.objects.exists()
    call_command("create_demo_users", "--allow-production", stdout=StringIO())
    assert User.objects.count() == 3


# --- Login and logout ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_login_page_has_labelled_fields(client):
    body = client.get(reverse("login")).content.decode()
    assert '<label for="id_username">' in body and 'id="id_username"' in body
    assert '<label for="id_password">' in body and 'autocomplete="current-password"' in body


@pytest.mark.django_db
def test_wrong_password_shows_an_error_and_keeps_the_username(client):
    demo_users_ensure()
    response = client.post(reverse("login"), {"username": "author", "password": "nope"})
    assert response.status_code == 200
    body = response.content.decode()
    assert 'role="alert"' in body
    assert 'value="author"' in body


@pytest.mark.django_db
def test_login_then_logout(client):
    demo_users_ensure()
    response = client.post(reverse("login"), {"username": "author", "password": "corecraft-author"})
    assert response.status_code == 302 and response["Location"] == reverse("home")
    home = client.get(reverse("home"))
    assert home.status_code == 200
    assert "roles: author" in home.content.decode()
    assert client.get(reverse("logout")).status_code == 405  # logging out is a POST (CSRF-protected)
    response = client.post(reverse("logout"))
    assert response.status_code == 302 and response["Location"] == reverse("login")
    assert client.get(reverse("home")).status_code == 302


@pytest.mark.django_db
def test_login_follows_next(client):
    demo_users_ensure()
    response = client.post(
        reverse("login") + "?next=/admin/",
        {"username": "reviewer", "password": "corecraft-reviewer", "next": "/admin/"},
    )
    assert response.status_code == 302 and response["Location"] == "/admin/"


def test_home_page_shows_world_counts_and_admin_links_to_staff(client, world):
    demo_users_ensure()
    client.login(username="author", password="corecraft-author")
    body = client.get(reverse("home")).content.decode()
    assert "Customers" in body and reverse("admin:world_app_customer_changelist") in body


def test_home_page_shows_the_world_clock_in_the_world_zone(client, world):
    demo_users_ensure()
    client.login(username="reviewer", password="corecraft-reviewer")
    assert "2025-09-15 14:00 EST" in client.get(reverse("home")).content.decode()


def test_reviewer_reads_json_indented(client, world):
    client.force_login(user_in(REVIEWER))
    body = client.get(reverse("admin:world_app_product_change", args=[world.cpu.pk])).content.decode()
    assert '<pre class="json-view">{\n  &quot;socket&quot;: &quot;AM5&quot;,\n  &quot;cores&quot;: 8,' in body


@pytest.mark.django_db
def test_login_is_throttled_per_name_after_repeated_failures(client, settings):
    demo_users_ensure()
    for _ in range(settings.LOGIN_FAILURES_PER_NAME):
        assert client.post(reverse("login"), {"username": "author", "password": "nope"}).status_code == 200
    # Locked now, even with the right password; another name is not.
    locked = client.post(reverse("login"), {"username": "Author", "password": "corecraft-author"})
    assert locked.status_code == 429 and "Too many failed attempts" in locked.content.decode()
    assert client.post(reverse("login"), {"username": "reviewer", "password": "corecraft-reviewer"}).status_code == 302
