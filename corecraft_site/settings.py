"""Settings for Corecraft Studio.

Every deploy-time value comes from the environment and is parsed strictly (see ``env.py``); the defaults
are the local machine's: Postgres and Redis on 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from corecraft_site.env import env_bool, env_datetime, env_float, env_int, env_list, env_str, parse_database_url

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = "corecraft-local-development-key-not-for-production"  # noqa: S105
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# Failed logins allowed per name and per client address before the login page answers 429 for LOGIN_LOCKOUT_S.
LOGIN_FAILURES_PER_NAME = env_int("LOGIN_FAILURES_PER_NAME", 5, minimum=1)
LOGIN_FAILURES_PER_ADDRESS = env_int("LOGIN_FAILURES_PER_ADDRESS", 30, minimum=1)
LOGIN_LOCKOUT_S = env_int("LOGIN_LOCKOUT_S", 900, minimum=1)
LOGIN_THROTTLE_KEY_PREFIX = "login-failures"  # the cache keys' prefix (each test gets its own)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc served from our static files: /api/docs/ works offline
    "world_app",
    "tasks_app",
    "rubrics_app",
    "trainer_bridge",
]

MIDDLEWARE = [
    "corecraft_site.not_found.PlainNotFoundMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "corecraft_site.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "tasks_app.authoring.navigation.navigation",
            ],
        },
    },
]

WSGI_APPLICATION = "corecraft_site.wsgi.application"
ASGI_APPLICATION = "corecraft_site.asgi.application"

# The live world and every app table live in Postgres. The "episode" alias is an in-memory SQLite
# connection that the episode engine swaps per episode (see world_app/episodes); it is never migrated.
_default_db = parse_database_url(env_str("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/corecraft"))
if env_bool("DB_POOL", True):
    # Django's psycopg 3 pool; persistent connections (CONN_MAX_AGE) must stay 0 with it.
    _default_db["OPTIONS"]["pool"] = {
        "min_size": env_int("DB_POOL_MIN", 1, minimum=0),
        "max_size": env_int("DB_POOL_MAX", 10, minimum=1),
        "timeout": env_int("DB_POOL_TIMEOUT", 10, minimum=1),
    }
_default_db["TEST"] = {"NAME": env_str("TEST_DATABASE_NAME", f"test_{_default_db['NAME']}")}
DATABASES = {
    "default": _default_db,
    "episode": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:", "TEST": {"NAME": ":memory:"}},
}
DATABASE_ROUTERS = ["world_app.routers.EpisodeRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# Files the app writes (release exports under MEDIA_ROOT/exports); served by the app itself, never publicly.
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(BASE_DIR / "var" / "media")))

# --- The Corecraft world --------------------------------------------------------------------------
# The world's own clock: time windows, return windows and warranty expiries are computed against it, so
# they are the same on every run. The public port of Corecraft fixes it at 2025-09-15 14:00 EST.
WORLD_NOW = env_datetime("WORLD_NOW", "2025-09-15T14:00:00-05:00")
WORLD_TIME_ZONE = env_str("WORLD_TIME_ZONE", "EST")
# Episodes kept materialised (in-memory SQLite) per process; colder ones are rebuilt from their log.
EPISODE_CACHE_SIZE = env_int("EPISODE_CACHE_SIZE", 1000, minimum=1)
# Open episodes idle longer than this are closed by the periodic clean-up.
EPISODE_IDLE_TIMEOUT_S = env_int("EPISODE_IDLE_TIMEOUT_S", 6 * 3600, minimum=60)
# A step's own commit does not wait for the WAL flush (0.1-0.4 ms of every step). A Postgres crash can then lose
# the last steps (under a second), which the engine survives: copies ahead of their log are noticed and rebuilt
# (docs/adr/0001-episode-engine.md, "Step overhead"). Off: every step waits for the disk.
EPISODE_LOG_ASYNC_COMMIT = env_bool("EPISODE_LOG_ASYNC_COMMIT", True)
# Steps taken outside a transaction of the caller are written in batches by the process holding the episode's
# lease (world_app/episodes/step_log.py): a step makes no round trip; a batch is written when it has
# EPISODE_LOG_BATCH steps or EPISODE_LOG_FLUSH_MS after its first, and before anyone closes, judges, rebuilds or
# reads the episode's log. A process that dies loses at most its unwritten batch (docs/adr/0001, "Deferred steps").
EPISODE_LOG_DEFER = env_bool("EPISODE_LOG_DEFER", True)
EPISODE_LOG_BATCH = env_int("EPISODE_LOG_BATCH", 64, minimum=1)
EPISODE_LOG_FLUSH_MS = env_int("EPISODE_LOG_FLUSH_MS", 50, minimum=1)

# MCP over HTTP: the URL clients reach it at (mcp_url is built from it; Host/Origin must match it). Empty: the
# --host/--port it listens on, allowed only on a loopback address. Extra Host values (a proxy's) may be added.
MCP_PUBLIC_URL = env_str("MCP_PUBLIC_URL", "")
MCP_ALLOWED_HOSTS = env_list("MCP_ALLOWED_HOSTS", [])
# API tokens are kept this long in each process after a look-up (a revocation elsewhere takes effect within it;
# at most 5 s). Token uses are written in batches this often by a background thread (0: on the request path);
# a process killed outright loses the uses of its last interval (trainer_bridge/usage.py).
API_TOKEN_CACHE_MS = env_int("API_TOKEN_CACHE_MS", 5000, minimum=0, maximum=5000)
API_USAGE_FLUSH_MS = env_int("API_USAGE_FLUSH_MS", 1000, minimum=0, maximum=60_000)
# Who checks an MCP bearer token (the API tokens of the trainer bridge): a callable secret -> Credential | None.
MCP_CREDENTIAL_VERIFIER = "trainer_bridge.authentication.episode_credential_for_secret"
# MCP task mode (trainer_bridge.mcp.tasks): episodes opened for a frozen release row, judged by its rubric. None: off.
MCP_TASK_PROVIDER = "trainer_bridge.mcp.release_rows.ReleaseRowTasks"

# --- Redis and Celery -----------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", REDIS_URL)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A message whose worker died unacknowledged goes back to its queue after the visibility timeout (the sweep runs
# every interval x throttle seconds). Tasks must be idempotent: calibration items are (tasks_app/tasks.py).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT_S", 3600, minimum=1),
    "unacked_restore_interval": env_int("CELERY_UNACKED_RESTORE_INTERVAL_S", 10, minimum=1),
    "unacked_restore_throttle": env_int("CELERY_UNACKED_RESTORE_THROTTLE", 10, minimum=1),
}
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"
# The calibration sweeper: a running item unclaimed for CLAIM_TIMEOUT (its worker gone), or a queued one whose
# message is older than REQUEUE_AFTER (a broker that lost it, or was down), is sent again; a run with no item
# claimed or settled for STALL_AFTER says it is stalled, and why.
CALIBRATION_SWEEP_INTERVAL_S = env_int("CALIBRATION_SWEEP_INTERVAL_S", 30, minimum=1)
CALIBRATION_CLAIM_TIMEOUT_S = env_int("CALIBRATION_CLAIM_TIMEOUT_S", 120, minimum=1)
CALIBRATION_REQUEUE_AFTER_S = env_int("CALIBRATION_REQUEUE_AFTER_S", 300, minimum=1)
CALIBRATION_STALL_AFTER_S = env_int("CALIBRATION_STALL_AFTER_S", 300, minimum=1)
# The queues of calibration's rollout and judging steps (tasks_app/tasks.py): one cannot starve the other.
CALIBRATION_ROLLOUTS_QUEUE = env_str("CALIBRATION_ROLLOUTS_QUEUE", "rollouts")
CALIBRATION_JUDGING_QUEUE = env_str("CALIBRATION_JUDGING_QUEUE", "judging")
# A criterion's llm verdicts are flagged for rewriting with at least MIN_LABELS human labels and a kappa below
# MAX_KAPPA or an agreement below MIN_AGREEMENT (rubrics_app/agreement.py).
JUDGE_AGREEMENT_MIN_LABELS = env_int("JUDGE_AGREEMENT_MIN_LABELS", 5, minimum=1)
JUDGE_AGREEMENT_MAX_KAPPA = env_float("JUDGE_AGREEMENT_MAX_KAPPA", 0.4, minimum=-1.0, maximum=1.0)
JUDGE_AGREEMENT_MIN_AGREEMENT = env_float("JUDGE_AGREEMENT_MIN_AGREEMENT", 0.8, minimum=0.0, maximum=1.0)
CELERY_BEAT_SCHEDULE = {
    "close-idle-episodes": {"task": "world_app.tasks.close_idle_episodes", "schedule": 600.0},
    "sweep-calibration-items": {
        "task": "tasks_app.tasks.sweep_calibration_items",
        "schedule": float(CALIBRATION_SWEEP_INTERVAL_S),
        "options": {"expires": float(CALIBRATION_SWEEP_INTERVAL_S)},
    },
}

CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL},
}

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # One bearer scheme for every API: the scoped `cc_` tokens (wired here, where the project joins its apps).
        "trainer_bridge.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # One error shape for every API error: {"error": {"code", "message", "fields"}}.
    "EXCEPTION_HANDLER": "world_app.api.exceptions.api_exception_handler",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Corecraft Studio API",
    "DESCRIPTION": "World snapshots, episodes, tools, releases and rewards for agent training.",
    "VERSION": "0.1.0",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # The model clients' HTTP library logs every request at INFO: a line per completion of every rollout and judge
    # call (thousands a minute in a calibration run), which the rollout's own record already holds. Failures
    # (WARNING and above) still show.
    "loggers": {"httpx2": {"level": "WARNING"}, "httpx": {"level": "WARNING"}},
}
