"""Groundwork settings: one file, every value from the environment through the typed helpers in env.py.

Local defaults work on a fresh machine (embedded PostgreSQL, inline Celery, offline embedder). With
DJANGO_ENV=production (the default of the production server, groundwork/gunicorn_config.py) DEBUG is off, cookies
are secure, the secret key is DJANGO_SECRET_KEY or one generated once into var/secret_key, and the deploy checks
pass.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import re
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from .connection_budget import connection_budget
from .dburl import database_config, replica_databases
from .env import env_bool, env_float, env_int, env_list, env_str, secret_file

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("GROUNDWORK_VAR_DIR", str(BASE_DIR / "var")))

DJANGO_ENV = env_str("DJANGO_ENV", "development")
PRODUCTION = DJANGO_ENV == "production"

_secret = env_str("DJANGO_SECRET_KEY")
if _secret is None:
    # Production without DJANGO_SECRET_KEY keeps a generated one in var/secret_key (owner-only), so sessions, reset
    # links and the connectors' credentials key stay valid across restarts and are shared by every process.
    _secret = secret_file(VAR_DIR / "secret_key") if PRODUCTION else \
        "dev-only-insecure-key-never-used-in-production-5b1c0e8a"
SECRET_KEY = _secret
# Production never shows Django's debug pages (they print settings and local variables): asking for them there
# is a start-up error, not a silent override.
DEBUG = env_bool("DJANGO_DEBUG", not PRODUCTION)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("DJANGO_DEBUG must be off when DJANGO_ENV=production")
# Production answers only the loopback names unless told its own (DJANGO_ALLOWED_HOSTS): a TLS proxy in front on
# this machine works as it is; any other Host is refused (it would go into reset links).
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if PRODUCTION
                         else ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "groundwork.admin_apps.GroundworkAdminConfig",  # the tenant-scoped admin site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and ReDoc served from our own static files (works offline)
    "axes",
    # Celery beat's schedule in the database (CELERY_BEAT_SCHEDULER below): each connector's sync intervals
    # are PeriodicTask rows its services write. Its admin is not offered (groundwork/admin.py).
    "django_celery_beat",
    "groundwork.apps.PlatformConfig",
    "knowledge.apps.KnowledgeConfig",
    "findings.apps.FindingsConfig",
    "chat.apps.ChatConfig",
    "connectors.apps.ConnectorsConfig",
]
# The benchmarks (`make bench`, its management commands) live beside the apps in the repository, never in the
# wheel: installed where the package is present.
if importlib.util.find_spec("benchmarks") is not None:
    INSTALLED_APPS.append("benchmarks.apps.BenchmarksConfig")

MIDDLEWARE = [
    # Outermost, so it sees every answer, the ones Django makes of errors raised anywhere below included: errors
    # under /api/ are JSON whatever DEBUG says.
    "groundwork.middleware.ApiErrorsJsonMiddleware",
    # Then every request starts with no database scope; authentication names the tenant (groundwork/rls.py).
    "groundwork.middleware.DatabaseScopeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Before anything reads the query string: too many parameters is a 400, not a 500 on the second read.
    "groundwork.middleware.QueryStringLimitMiddleware",
    # Static files (CSS, JS, the offline API docs) from the app server itself, so the production server is a
    # whole product without a front proxy; a proxy or CDN in front may still cache them.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # A view's connection-level database failure becomes a 503 with Retry-After (groundwork/database_unavailable.py).
    "groundwork.database_unavailable.DatabaseUnavailableMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "groundwork.middleware.ContentSecurityPolicyMiddleware",
    # Last, as django-axes requires: it turns a lockout raised during authentication into the lockout page.
    "axes.middleware.AxesMiddleware",
]

# AxesStandaloneBackend first: it refuses a locked-out username+IP before any password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    # OpenID Connect sign-in; answers nothing unless OIDC_ENABLED (below).
    "groundwork.oidc.GroundworkOIDCBackend",
]

ROOT_URLCONF = "groundwork.urls"
WSGI_APPLICATION = "groundwork.wsgi.application"
ASGI_APPLICATION = "groundwork.asgi.application"

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
                "groundwork.context_processors.shell",
                "groundwork.context_processors.sign_in",
            ],
        },
    },
]

# --- Database: PostgreSQL with pgvector, external or embedded -------------------------------------
DATABASE_URL = env_str("DATABASE_URL")
EMBEDDED_DATABASE = DATABASE_URL is None
if EMBEDDED_DATABASE:
    from .embedded_db import embedded_database_url

    DATABASE_URL = embedded_database_url(VAR_DIR)
# Bounded connections. DATABASE_POOL (on under the production server: groundwork/gunicorn_config.py) gives each
# process one psycopg pool of DATABASE_POOL_MAX_SIZE connections shared by its request and retrieval threads.
# The budget every process adds up to must fit the server (groundwork/connection_budget.py checks it at start):
#   WEB_CONCURRENCY × DATABASE_POOL_MAX_SIZE + CELERY_WORKER_CONCURRENCY × 2 + DATABASE_CONNECTION_RESERVE
#     ≤ max_connections, with DATABASE_POOL_MAX_SIZE = WEB_THREADS + RETRIEVAL_PARALLEL_WORKERS by default.
# A request that finds no free connection within DATABASE_POOL_TIMEOUT s gets a 503 with Retry-After
# (groundwork/database_unavailable.py). Without the pool (runserver, manage.py, Celery) each thread keeps its
# connection for DATABASE_CONN_MAX_AGE s.
DATABASE_POOL = env_bool("DATABASE_POOL", False)
CONNECTION_BUDGET = connection_budget()
# Threads for retrieval's second channel (RETRIEVAL_PARALLEL_CHANNELS): each holds a pooled connection, so the
# budget decides how many.
RETRIEVAL_PARALLEL_WORKERS = CONNECTION_BUDGET.retrieval_workers
DATABASE_POOL_TIMEOUT = env_float("DATABASE_POOL_TIMEOUT", 5.0)
DATABASE_RETRY_AFTER = env_int("DATABASE_RETRY_AFTER", 5, minimum=1)  # seconds, the 503's Retry-After
_database = database_config(DATABASE_URL, conn_max_age=0 if DATABASE_POOL else env_int("DATABASE_CONN_MAX_AGE", 60))
# An unreachable host must fail a connection attempt in seconds, not after the kernel's TCP timeout.
_database["OPTIONS"].setdefault("connect_timeout", env_int("DATABASE_CONNECT_TIMEOUT", 5, minimum=1))
# Server-side prepared statements, only where code asks for them (groundwork.sql.prepared_cursor: the graph
# channel's statements, planned once per connection). Django's own cursors bind client-side and never prepare.
# Off (DATABASE_PREPARED_STATEMENTS=0) behind a pooler that cannot keep them (PgBouncer in transaction mode
# before 1.21): the same statements then run unprepared.
DATABASE_PREPARED_STATEMENTS = env_bool("DATABASE_PREPARED_STATEMENTS", True)
if DATABASE_PREPARED_STATEMENTS:
    _database["OPTIONS"].setdefault("prepare_threshold", 5)
if DATABASE_POOL:
    # min_size 1: an idle worker keeps one warm connection; the pool reconnects in the background after the
    # database restarts, and checks each connection before lending it (CONN_HEALTH_CHECKS).
    _database["OPTIONS"]["pool"] = {"min_size": 1, "max_size": CONNECTION_BUDGET.pool_max_size,
                                    "timeout": DATABASE_POOL_TIMEOUT}
DATABASES = {"default": _database}
# Streaming replicas (groundwork/replicas.py): comma-separated URLs, one alias each (replica_1, ...). Search reads
# go to one that has replayed past the caller's tenants' latest access change; writes never do.
DATABASE_REPLICA_URLS = env_list("DATABASE_REPLICA_URLS", [])
DATABASES.update(replica_databases(DATABASE_REPLICA_URLS, primary=_database))
DATABASE_ROUTERS = ["groundwork.replicas.ReplicaRouter"]
# A replica whose last replayed transaction is further behind than this (while the primary has written past
# it) serves nothing until it catches up.
REPLICA_MAX_LAG_S = env_float("REPLICA_MAX_LAG_S", 10.0)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Row-level security (groundwork/rls.py): runtime connections SET ROLE to DATABASE_APP_ROLE (created by migrate;
# owns no table, no BYPASSRLS) and every tenant-scoped table admits only the rows of the tenants the caller's
# transaction names. Off: connections keep the login role and migrate removes the policies.
GROUNDWORK_RLS = env_bool("GROUNDWORK_RLS", True)
DATABASE_APP_ROLE = env_str("DATABASE_APP_ROLE", "groundwork_app")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
# Serve from the apps' static folders as well as STATIC_ROOT: a server started without `collectstatic` (tests,
# a quick `gunicorn` by hand) still has its stylesheet. The files are few and small, read once at start.
WHITENOISE_USE_FINDERS = True
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
CSRF_FAILURE_VIEW = "groundwork.pages.csrf_failure"

# --- OpenID Connect sign-in (mozilla-django-oidc; groundwork/oidc.py) -------------------------------------
# Off unless the client id and the provider's four endpoints are set. Names are mozilla-django-oidc's own.
OIDC_RP_CLIENT_ID = env_str("OIDC_RP_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = env_str("OIDC_RP_CLIENT_SECRET", "")
OIDC_OP_AUTHORIZATION_ENDPOINT = env_str("OIDC_OP_AUTHORIZATION_ENDPOINT", "")
OIDC_OP_TOKEN_ENDPOINT = env_str("OIDC_OP_TOKEN_ENDPOINT", "")
OIDC_OP_USER_ENDPOINT = env_str("OIDC_OP_USER_ENDPOINT", "")
OIDC_OP_JWKS_ENDPOINT = env_str("OIDC_OP_JWKS_ENDPOINT", "")
# The ID token's `iss` must equal this when set (its `aud` must always name OIDC_RP_CLIENT_ID).
OIDC_OP_ISSUER = env_str("OIDC_OP_ISSUER", "")
OIDC_RP_SIGN_ALGO = env_str("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = env_str("OIDC_RP_SCOPES", "openid email profile")
OIDC_USE_PKCE = env_bool("OIDC_USE_PKCE", True)
OIDC_TIMEOUT = env_int("OIDC_TIMEOUT", 10, minimum=1)
OIDC_ENABLED = all((OIDC_RP_CLIENT_ID, OIDC_OP_AUTHORIZATION_ENDPOINT, OIDC_OP_TOKEN_ENDPOINT, OIDC_OP_USER_ENDPOINT,
                    OIDC_OP_JWKS_ENDPOINT))
# The sign-in page's "Sign in with <name>", and the provider part of the `provider:group` principals the groups
# claim maps to (lower-case letters, digits, "_.-").
OIDC_PROVIDER_NAME = env_str("OIDC_PROVIDER_NAME", "single sign-on")
OIDC_PROVIDER_KEY = env_str("OIDC_PROVIDER_KEY", "oidc")
if not re.fullmatch(r"[a-z0-9_.-]+", OIDC_PROVIDER_KEY):
    raise ImproperlyConfigured("OIDC_PROVIDER_KEY must be lower-case letters, digits, '_', '.' or '-'")
OIDC_GROUPS_CLAIM = env_str("OIDC_GROUPS_CLAIM", "groups")
# Who may sign in, into which tenant: "acme.com=acme,acme.co.uk=acme". An address of another domain is refused.
OIDC_TENANT_DOMAINS = env_list("OIDC_TENANT_DOMAINS", [])
# IdP groups that make a member an admin or analyst of the rule's tenant. Unset (the default): the claim never
# grants more than member, and roles are set in Groundwork; set: the IdP decides the role at every sign-in.
OIDC_ADMIN_GROUPS = env_list("OIDC_ADMIN_GROUPS", [])
OIDC_ANALYST_GROUPS = env_list("OIDC_ANALYST_GROUPS", [])
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc-callback"
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?sso=failed"

# --- Sign-in throttling (django-axes): per username + IP, so guessing one account locks only that pair ----
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = env_float("AXES_COOLOFF_TIME", 0.25)  # hours until a lockout lifts by itself
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "groundwork.throttling.lockout_response"  # renders registration/lockout.html
AXES_VERBOSE = False
# Reverse proxies in front of the app (0: none, REMOTE_ADDR is the client). See groundwork/throttling.py.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0, minimum=0)
AXES_CLIENT_IP_CALLABLE = "groundwork.throttling.client_ip"
AXES_USERNAME_CALLABLE = "groundwork.throttling.client_username"  # cut to the 255 characters axes stores
AXES_USERNAME_FORM_FIELD = "username"  # axes' default, declared: client_username reads it

# --- E-mail (password reset): console in development, SMTP in production --------------------------------
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend" if PRODUCTION else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 587 if PRODUCTION else 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", PRODUCTION)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Groundwork <no-reply@localhost>")
SERVER_EMAIL = env_str("SERVER_EMAIL", DEFAULT_FROM_EMAIL)
PASSWORD_RESET_TIMEOUT = env_int("PASSWORD_RESET_TIMEOUT", 3 * 3600, minimum=300)  # seconds a reset link works
# Reset e-mails asked for one address, and by one client address, per window (groundwork/throttling.py); over
# either, the form answers 429 with when to try again.
PASSWORD_RESET_PER_ADDRESS = env_int("PASSWORD_RESET_PER_ADDRESS", 3, minimum=1)
PASSWORD_RESET_PER_CLIENT = env_int("PASSWORD_RESET_PER_CLIENT", 10, minimum=1)
PASSWORD_RESET_THROTTLE_WINDOW_S = env_int("PASSWORD_RESET_THROTTLE_WINDOW_S", 3600, minimum=1)

# --- Celery: real workers when a broker is configured, inline otherwise ----------------------------
_broker_url = env_str("CELERY_BROKER_URL")
CELERY_TASK_ALWAYS_EAGER = _broker_url is None
# Inline mode still makes Celery build a producer; the in-memory transport keeps it from ever
# looking for a broker on localhost.
CELERY_BROKER_URL = _broker_url or "memory://localhost/"
CELERY_TASK_EAGER_PROPAGATES = True
# Without a broker, a task queued off the request (an upload's parsing, a connector's sync) runs on one of this
# process's TASKS_OFF_REQUEST_THREADS background threads once the request answered, not inside it. False: inline, in
# the request, like every other task (the test suite's default, so a test sees the outcome in its own transaction).
TASKS_OFF_REQUEST = env_bool("TASKS_OFF_REQUEST", True)
TASKS_OFF_REQUEST_THREADS = env_int("TASKS_OFF_REQUEST_THREADS", 2, minimum=1)
CELERY_TASK_ACKS_LATE = True  # a task is acknowledged after it ran, so a crash re-delivers it
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1  # long embedding batches must not queue behind one busy worker
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 300, minimum=1)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 360, minimum=1)
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Crash safety (docs/operations.md): with acks_late a task is acknowledged only after it ran. A pool
# child killed mid-task is requeued at once (reject_on_worker_lost); a whole worker killed (SIGKILL, OOM, a lost
# machine) leaves its messages unacknowledged in Redis, and a live worker's sweep hands them out again once they
# are older than the visibility timeout. That timeout must exceed the longest task (default: twice the hard
# limit), or a task still running is handed to a second worker; every task is idempotent, so that costs work,
# not correctness. The sweep runs every CELERY_UNACKED_RESTORE_INTERVAL seconds (kombu's default would be 100).
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", CELERY_TASK_TIME_LIMIT * 2, minimum=1)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
    "unacked_restore_interval": env_int("CELERY_UNACKED_RESTORE_INTERVAL", 10, minimum=1),
    "unacked_restore_throttle": 1,
    # The sweep holds a Redis lock; a worker killed holding it blocks sweeps until the lock expires.
    "unacked_mutex_expire": env_int("CELERY_UNACKED_MUTEX_EXPIRE", 300, minimum=1),
}
# Celery beat (`make worker` runs it; with several workers run `celery -A groundwork beat` once) reads its
# schedule from the database through django-celery-beat: each connector's content and permission intervals are
# PeriodicTask rows (`connector:<id>:<mode>`) that connectors/services.py writes whenever a connector changes, so
# a new interval needs no deploy and no beat restart (the scheduler re-reads the rows when they change).
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# Sweeps that re-queue recent work whose task message was lost (knowledge/resume.py) — rows of the last
# WORK_RESUME_WINDOW_S older than WORK_RESUME_AFTER_S that still lack their effect — and connector sync runs
# whose task was lost. They stay in code: the DatabaseScheduler writes these entries into its PeriodicTask
# table itself at every beat start (by name, updating the interval), so a fresh or upgraded database gets them
# without a data migration or a command to remember, and their interval follows WORK_RESUME_INTERVAL_S.
WORK_RESUME_INTERVAL_S = env_int("WORK_RESUME_INTERVAL_S", 300, minimum=1)
WORK_RESUME_AFTER_S = env_int("WORK_RESUME_AFTER_S", 900, minimum=0)
WORK_RESUME_WINDOW_S = env_int("WORK_RESUME_WINDOW_S", 86400, minimum=1)
CELERY_BEAT_SCHEDULE = {
    "knowledge-work-resume": {"task": "knowledge.tasks.work_resume_task", "schedule": WORK_RESUME_INTERVAL_S},
    "findings-extraction-resume": {"task": "findings.tasks.extraction_resume_task",
                                   "schedule": WORK_RESUME_INTERVAL_S},
    "connectors-sync-runs-requeue": {"task": "connectors.tasks.sync_runs_requeue_task",
                                     "schedule": WORK_RESUME_INTERVAL_S},
}
# The queue tasks go to when none is named (follow-up tasks too): lets a test or a second deployment on one
# Redis keep its own workers.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
# Worker processes per `make worker`; counted in the connection budget above.
CELERY_WORKER_CONCURRENCY = CONNECTION_BUDGET.celery_processes

# --- API -------------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "groundwork.authentication.ApiKeyAuthentication",
        "groundwork.authentication.SessionAuthorityAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["groundwork.permissions.CallerHasRole"],
    "DEFAULT_SCHEMA_CLASS": "groundwork.schema.GroundworkAutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "groundwork.api.exception_handler",
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "groundwork.negotiation.NamedFormatNegotiation",
    "DEFAULT_PARSER_CLASSES": ["groundwork.parsers.BoundedJSONParser", "rest_framework.parsers.FormParser",
                               "rest_framework.parsers.MultiPartParser"],
}
# Request body limits apply to JSON too (groundwork/parsers.py): a bigger body is a 413 before it is read; a
# deeper one is a 400. The byte limit leaves room for a document of DOCUMENT_MAX_TEXT_BYTES sent as JSON text.
API_MAX_JSON_DEPTH = env_int("API_MAX_JSON_DEPTH", 64, minimum=2)
SPECTACULAR_SETTINGS = {
    "TITLE": "Groundwork API",
    "DESCRIPTION": (
        "Answers only from a tenant's own records, with record-level citations. Authenticate with "
        "`Authorization: Bearer <api key>`, or a session; session users who belong to several tenants "
        "name one with the `/t/<tenant>/` URL prefix."
    ),
    "VERSION": "1.0.0",
    # 3.1: schema objects are JSON Schema, so the answer stream can say its events' data is JSON of a given shape
    # (contentMediaType / contentSchema), and nullable fields are plain `type: [..., "null"]`.
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and docs are public and the same for everyone: resolving the caller's tenant there refused
    # (401) signed-in people in several tenants or in none (operators), whom the user menu sends here.
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,
    # Served from drf-spectacular-sidecar's static files: the docs need no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Swagger UI would otherwise send the schema to validator.swagger.io for its badge.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    # One name for a choice set several fields share (a document's visibility, a source's default visibility).
    "ENUM_NAME_OVERRIDES": {
        "VisibilityEnum": "knowledge.models.Visibility",
        "UploadItemStatusEnum": "knowledge.models.UploadItem.Status",
        "UploadBatchStatusEnum": "knowledge.models.UploadBatch.Status",
        "AccessRequestStatusEnum": ["open", "granted", "declined"],
        "ConnectorKindEnum": "connectors.models.Connector.Kind",
        "SourceKindEnum": "knowledge.models.Source.Kind",
        "SyncRunModeEnum": "connectors.models.SyncRun.Mode",
        "AnswerRatingEnum": ["up", "down"],
    },
}

# --- Security ----------------------------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the chat page reads it to send the CSRF header
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_AGE = env_int("SESSION_COOKIE_AGE", 12 * 3600, minimum=300)  # seconds; sign in again after it
SESSION_EXPIRE_AT_BROWSER_CLOSE = env_bool("SESSION_EXPIRE_AT_BROWSER_CLOSE", False)
if PRODUCTION:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load balancers check the backend over plain http
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

# --- Product settings --------------------------------------------------------------------------------
# The text one document may hold once extracted (checked at ingest, whatever the entry); the file it came in
# is limited by UPLOAD_MAX_FILE_BYTES below. MAX_UPLOAD_BYTES was this setting's name, read backwards.
DOCUMENT_MAX_TEXT_BYTES = env_int("DOCUMENT_MAX_TEXT_BYTES", 10 * 1024 * 1024, minimum=1024,
                                  deprecated_alias="MAX_UPLOAD_BYTES")
DATA_UPLOAD_MAX_MEMORY_SIZE = DOCUMENT_MAX_TEXT_BYTES + 1024 * 1024
API_MAX_JSON_BYTES = env_int("API_MAX_JSON_BYTES", DATA_UPLOAD_MAX_MEMORY_SIZE, minimum=1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = DOCUMENT_MAX_TEXT_BYTES

# --- Knowledge: file uploads (knowledge/files.py, upload batches) ---------------------------------------
# Checked before any file is parsed; a file or zip member over a limit is recorded "refused" with the reason.
UPLOAD_MAX_FILE_BYTES = env_int("UPLOAD_MAX_FILE_BYTES", 25 * 1024 * 1024, minimum=1024)
UPLOAD_MAX_FILES = env_int("UPLOAD_MAX_FILES", 200, minimum=1)  # items per batch, zip members included
UPLOAD_MAX_BATCH_BYTES = env_int("UPLOAD_MAX_BATCH_BYTES", 200 * 1024 * 1024, minimum=1024)
UPLOAD_ZIP_MAX_MEMBERS = env_int("UPLOAD_ZIP_MAX_MEMBERS", 1000, minimum=1)
UPLOAD_ZIP_MAX_UNCOMPRESSED_BYTES = env_int("UPLOAD_ZIP_MAX_UNCOMPRESSED_BYTES", 200 * 1024 * 1024, minimum=1024)
UPLOAD_ZIP_MAX_RATIO = env_int("UPLOAD_ZIP_MAX_RATIO", 100, minimum=2)  # uncompressed / compressed, per member
# Django's own cap on files per request sits above ours, so too many files get our per-item reason, not a bare 400.
DATA_UPLOAD_MAX_NUMBER_FILES = max(100, UPLOAD_MAX_FILES * 2)
# Every reader of a file from outside (uploads, the document API's file, connectors' files) runs in a child process
# (knowledge/isolation.py) under a budget proportional to the file: CPU seconds per MB (at least the floor), wall
# clock three times that (at least its floor), memory above what the process maps, and text of so many characters
# per input byte (between a floor and a ceiling). A file past one is refused with the reason; at most
# PARSE_MAX_CONCURRENT children per process.
PARSE_CPU_S_PER_MB = env_float("PARSE_CPU_S_PER_MB", 1.5)
PARSE_CPU_MIN_S = env_float("PARSE_CPU_MIN_S", 1.0)
PARSE_WALL_MIN_S = env_float("PARSE_WALL_MIN_S", 10.0)
PARSE_MEMORY_MB = env_int("PARSE_MEMORY_MB", 1024, minimum=64)
PARSE_OUTPUT_CHARS_PER_BYTE = env_int("PARSE_OUTPUT_CHARS_PER_BYTE", 20, minimum=1)
PARSE_OUTPUT_MIN_CHARS = env_int("PARSE_OUTPUT_MIN_CHARS", 256 * 1024, minimum=1024)
PARSE_OUTPUT_MAX_CHARS = env_int("PARSE_OUTPUT_MAX_CHARS", 64 * 1024 * 1024, minimum=1024)
PARSE_MAX_CONCURRENT = env_int("PARSE_MAX_CONCURRENT", 2, minimum=1)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "filters": {"expected_refusal": {"()": "groundwork.logging_filters.ExpectedRefusalFilter"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # The MCP SDK logs at INFO on every /mcp request (stateless mode starts and stops a session manager each time).
    "loggers": {"pgserver": {"level": "WARNING"}, "django.db.backends": {"level": "WARNING"},
                "mcp": {"level": "WARNING"},
                # An expected 403 (a page refusing a caller) is one line without a traceback.
                "django.request": {"filters": ["expected_refusal"]}},
}

# The public evaluation sets (SciFact, Cranfield, CISI) the benchmarks read; a missing set is skipped and named.
# Unset: the folder benchmarks.eval_dir() names (the one sanctioned path outside the repository).
GROUNDWORK_EVAL_DIR = env_str("GROUNDWORK_EVAL_DIR")

# Apps whose `urls` module contributes `api_urlpatterns` (mounted at /api/v1/ and /t/<tenant>/api/v1/)
# and `page_urlpatterns` (mounted at /t/<tenant>/), and optionally `root_urlpatterns` (mounted at /: the MCP
# server's /mcp). The root URLconf reads this list, so the platform layer composes the apps without importing them.
GROUNDWORK_URL_MODULES = ["groundwork.app_urls", "knowledge.urls", "findings.urls", "chat.urls",
                          "connectors.urls"]

# --- Connectors ----------------------------------------------------------------------------------------
# The Fernet key (urlsafe base64 of 32 bytes) that encrypts connector credentials at rest. Unset: derived from
# SECRET_KEY (so rotating SECRET_KEY makes stored credentials unreadable: set this to keep them).
_connectors_key = env_str("CONNECTORS_CREDENTIALS_KEY")
if _connectors_key is None:
    import base64
    import hashlib

    _connectors_key = base64.urlsafe_b64encode(
        hashlib.sha256(f"groundwork-connectors:{SECRET_KEY}".encode()).digest()).decode()
CONNECTORS_CREDENTIALS_KEY = _connectors_key
# Folder, zip and export paths a connector names are relative to <root>/<tenant slug>/ and may not leave it:
# a tenant admin can make the server read files only from its own tenant's drop folder.
CONNECTORS_IMPORT_ROOT = Path(env_str("CONNECTORS_IMPORT_ROOT", str(VAR_DIR / "imports")))
# Per-item errors kept on one sync run (the counts go on past it).
CONNECTORS_MAX_RUN_ERRORS = env_int("CONNECTORS_MAX_RUN_ERRORS", 100, minimum=1)
# Records per ingest transaction during a content sync.
CONNECTORS_BATCH_SIZE = env_int("CONNECTORS_BATCH_SIZE", 100, minimum=1)
# Live API connectors (Confluence Cloud, GitHub): plain http base URLs only when allowed (local fakes, development).
CONNECTORS_API_ALLOW_HTTP = env_bool("CONNECTORS_API_ALLOW_HTTP", False)
# Live connectors connect to public addresses only (connectors/sources/egress.py). The exceptions, for servers on
# a private network (an on-premises Confluence or GitHub Enterprise): host names ("wiki.corp.example"; a leading
# dot, ".corp.example", admits the domain and its subdomains) and networks or addresses ("10.20.0.0/16").
CONNECTOR_ALLOWED_HOSTS = env_list("CONNECTOR_ALLOWED_HOSTS", [])
for _entry in CONNECTOR_ALLOWED_HOSTS:
    if "/" in _entry:
        try:
            ipaddress.ip_network(_entry.strip("[]"), strict=False)
        except ValueError as _exc:
            raise ImproperlyConfigured(f"CONNECTOR_ALLOWED_HOSTS: {_entry!r} is not a network ({_exc})") from None
# A rate-limited request waits what the server asks, up to this many seconds per wait, this many times; a longer
# wait fails the run (the next one resumes) instead of holding a worker.
CONNECTORS_API_MAX_WAIT_S = env_int("CONNECTORS_API_MAX_WAIT_S", 120, minimum=1)
CONNECTORS_API_MAX_RETRIES = env_int("CONNECTORS_API_MAX_RETRIES", 5, minimum=0)
# Live connectors list everything (and so find deletions) at least this often; between, they sync incrementally.
CONNECTORS_FULL_LISTING_HOURS = env_int("CONNECTORS_FULL_LISTING_HOURS", 24, minimum=1)
# Confluence's XML space export: entities.xml is streamed (never held whole), up to this many bytes; its
# attachments and every other export file stay under UPLOAD_MAX_FILE_BYTES.
CONNECTORS_EXPORT_XML_MAX_BYTES = env_int("CONNECTORS_EXPORT_XML_MAX_BYTES", 2 * 1024**3, minimum=1024)
# Slack live API mode (connectors/sources/slack_api.py): the Web API's address (a test points it at a fake),
# the per-call timeout, how many pages one list call may take, and the bounded 429 handling: retries per call,
# and the longest Retry-After the sync will wait (a longer one fails the channel, to be read next run).
SLACK_API_BASE_URL = env_str("SLACK_API_BASE_URL", "https://slack.com/api/")
SLACK_API_TIMEOUT_S = env_int("SLACK_API_TIMEOUT_S", 30, minimum=1)
SLACK_API_MAX_PAGES = env_int("SLACK_API_MAX_PAGES", 10000, minimum=1)
SLACK_API_RATE_LIMIT_RETRIES = env_int("SLACK_API_RATE_LIMIT_RETRIES", 5, minimum=0)
SLACK_API_MAX_RETRY_AFTER_S = env_int("SLACK_API_MAX_RETRY_AFTER_S", 120, minimum=1)

# --- MCP over stdio (`manage.py mcp_stdio`) ------------------------------------------------------------------
# The API key the local MCP server acts as (the same keys as the REST API and /mcp). Read only by that command;
# a process without it serves nothing.
GROUNDWORK_API_KEY = env_str("GROUNDWORK_API_KEY")

# --- Chunking, embeddings, retrieval, findings and answers: groundwork/settings_answering.py ------------------
from .settings_answering import *  # noqa: E402,F403 - one settings module, split by concern
