import pytest
from django.core.exceptions import ImproperlyConfigured

from corecraft_site.env import env_bool, env_datetime, env_int, parse_database_url


def test_env_bool_rejects_junk(monkeypatch):
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="X_FLAG"):
        env_bool("X_FLAG", False)
    monkeypatch.setenv("X_FLAG", "Yes")
    assert env_bool("X_FLAG", False) is True


def test_env_int_bounds(monkeypatch):
    monkeypatch.setenv("X_N", "12x")
    with pytest.raises(ImproperlyConfigured, match="not an integer"):
        env_int("X_N", 1)
    monkeypatch.setenv("X_N", "0")
    with pytest.raises(ImproperlyConfigured, match="below the minimum"):
        env_int("X_N", 1, minimum=1)
    monkeypatch.delenv("X_N")
    assert env_int("X_N", 7) == 7


def test_env_datetime_needs_offset(monkeypatch):
    monkeypatch.setenv("X_NOW", "2025-09-15T14:00:00")
    with pytest.raises(ImproperlyConfigured, match="UTC offset"):
        env_datetime("X_NOW", "2025-09-15T14:00:00-05:00")


def test_database_url_parsing():
    db = parse_database_url("postgres://app:s%40cret@db.internal:6543/corecraft?sslmode=require")
    assert db["NAME"] == "corecraft"
    assert db["USER"] == "app"
    assert db["PASSWORD"] == "s@cret"
    assert db["HOST"] == "db.internal"
    assert db["PORT"] == "6543"
    assert db["OPTIONS"] == {"sslmode": "require"}
    with pytest.raises(ImproperlyConfigured, match="scheme"):
        parse_database_url("mysql://x@y/z")
    with pytest.raises(ImproperlyConfigured, match="names no database"):
        parse_database_url("postgres://x@y:5432/")


def test_a_missing_database_is_named_at_once_not_a_pool_timeout(settings, django_db_blocker):
    import copy
    import time

    from django.db import OperationalError
    from django.db.utils import ConnectionHandler

    missing = copy.deepcopy(settings.DATABASES["default"])
    missing["NAME"] = "cc_no_such_database_here"
    missing["OPTIONS"]["pool"] = {"min_size": 1, "max_size": 2, "timeout": 10}
    # Its own alias: pools are kept per alias.
    handler = ConnectionHandler({"default": settings.DATABASES["default"], "missing_db": missing})
    connection = handler["missing_db"]
    started = time.monotonic()
    try:
        with django_db_blocker.unblock(), pytest.raises(OperationalError, match='"cc_no_such_database_here" does not'):
            connection.ensure_connection()
    finally:
        connection.close_pool()
    assert time.monotonic() - started < 5
