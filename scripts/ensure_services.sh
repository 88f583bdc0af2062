#!/usr/bin/env bash
# Start Postgres and Redis if they are not running (the commands of this machine kind), and create the
# app's database: the one DATABASE_URL names (postgres://user@host:port/NAME, as the settings read it), else
# DB_NAME, else corecraft. Safe to run any number of times.
set -euo pipefail

DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/${DB_NAME:-corecraft}}
# Host, port, user and database name out of the URL (the same parts corecraft_site/env.py reads).
read -r PGHOST PGPORT PGUSER DB_NAME < <(python3 - "$DATABASE_URL" <<'PY'
import sys
from urllib.parse import unquote, urlsplit

parts = urlsplit(sys.argv[1])
name = unquote(parts.path.lstrip("/"))
if parts.scheme not in ("postgres", "postgresql", "pgsql") or not name:
    sys.exit(f"DATABASE_URL must be postgres://user@host:port/NAME, not {sys.argv[1]!r}")
print(parts.hostname or "127.0.0.1", parts.port or 5432, unquote(parts.username or "postgres"), name)
PY
)
export PGHOST PGPORT PGUSER

if ! pg_isready -q -h "$PGHOST" -p "$PGPORT"; then
  echo "starting postgres"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start
  for _ in $(seq 1 30); do pg_isready -q -h "$PGHOST" -p "$PGPORT" && break; sleep 1; done
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  echo "starting redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done
fi
if ! psql -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='${DB_NAME//\'/\'\'}'" | grep -q 1; then
  echo "creating database $DB_NAME"
  psql -d postgres -qc "CREATE DATABASE \"${DB_NAME//\"/\"\"}\""
fi
