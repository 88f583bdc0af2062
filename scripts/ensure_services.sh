#!/usr/bin/env bash
# Start Postgres and Redis if they are not running (the commands of this machine kind), and create the
# app's database. Safe to run any number of times.
set -euo pipefail

PGHOST=${PGHOST:-127.0.0.1}
PGUSER=${PGUSER:-postgres}
DB_NAME=${DB_NAME:-corecraft}

if ! pg_isready -q -h "$PGHOST" -p 5432; then
  echo "starting postgres"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start
  for _ in $(seq 1 30); do pg_isready -q -h "$PGHOST" -p 5432 && break; sleep 1; done
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  echo "starting redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done
fi
if ! psql -h "$PGHOST" -U "$PGUSER" -tAc "SELECT 1 FROM pg_database WHERE datname='$DB_NAME'" | grep -q 1; then
  psql -h "$PGHOST" -U "$PGUSER" -qc "CREATE DATABASE \"$DB_NAME\""
fi
