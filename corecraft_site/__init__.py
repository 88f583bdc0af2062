"""The project: settings (strict environment parsing), the URL map, the Celery app, and domain-free plumbing every
app may use (the LLM client, canonical hashing, roles, admin and refusal helpers). It imports no app; the apps'
pages and APIs are included in ``urls.py`` by module name. See ARCHITECTURE.md."""

from corecraft_site.celery import app as celery_app

__all__ = ("celery_app",)
