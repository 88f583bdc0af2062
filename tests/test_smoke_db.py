import pytest
from django.contrib.auth.models import Group


@pytest.mark.django_db
def test_role_groups_exist():
    assert set(Group.objects.values_list("name", flat=True)) >= {"author", "reviewer", "admin"}


@pytest.mark.django_db
def test_healthz_reports_services(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"postgres": "ok", "redis": "ok"}
