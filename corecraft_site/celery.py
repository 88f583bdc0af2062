"""The Celery app. Postgres rows are the truth; Celery only moves work (ARCHITECTURE.md, "Background work")."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "corecraft_site.settings")

app = Celery("corecraft_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
