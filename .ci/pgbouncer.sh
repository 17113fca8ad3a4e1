#!/usr/bin/env bash
# Starts (or reuses) PgBouncer in transaction pooling mode on 127.0.0.1 in
# front of the PostgreSQL server on 127.0.0.1:5432, the way most PostgreSQL
# deployments put a pooler in front, and prints the environment the tests
# need as export lines on stdout; everything else goes to stderr.
#
#   eval "$(bash .ci/pgbouncer.sh)"   # start or reuse; sets PARLEY_TEST_PGBOUNCER
#   bash .ci/pgbouncer.sh stop        # stop it and remove its files
#
# PgBouncer is Debian's package (1.18), installed when missing. It runs as
# the postgres user (it refuses to run as root), with trust authentication
# (as the server behind it), pool_mode = transaction: a server connection
# is given to a client for one transaction only, so session state (PREPARE,
# temporary tables, SET) does not follow a client. Its files live in
# /tmp/parley-pgbouncer (the postgres user cannot read root's home). PARLEY_PGBOUNCER_STARTED=1
# says that this call started it (.ci/run then stops it when it ends).
set -euo pipefail

RUN=${PARLEY_PGBOUNCER_DIR:-/tmp/parley-pgbouncer}
PORT=${PARLEY_PGBOUNCER_PORT:-6432}

log() { printf 'pgbouncer.sh: %s\n' "$*" >&2; }
fail() { log "$*"; exit 1; }
running() { [ -f "$RUN/pgbouncer.pid" ] && kill -0 "$(cat "$RUN/pgbouncer.pid")" 2>/dev/null; }
up() { pg_isready -q -h 127.0.0.1 -p "$PORT" -d postgres -U postgres; }

stop() {
  if running; then
    pid=$(cat "$RUN/pgbouncer.pid")
    log "stopping PgBouncer (pid $pid)"
    kill "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$RUN"
}

if [ "${1:-}" = stop ]; then
  stop
  exit 0
fi
[ $# -eq 0 ] || fail "usage: pgbouncer.sh [stop]"

if [ ! -x /usr/sbin/pgbouncer ]; then
  log "installing pgbouncer"
  apt-get install -y pgbouncer >/dev/null 2>&1 ||
    { apt-get update >/dev/null && apt-get install -y pgbouncer >/dev/null; } ||
    fail "could not install pgbouncer"
fi

started=0
if ! running || ! up; then
  stop
  mkdir -p "$RUN"
  cat >"$RUN/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=5432
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PORT
unix_socket_dir =
auth_type = trust
auth_file = $RUN/userlist.txt
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 40
logfile = $RUN/pgbouncer.log
pidfile = $RUN/pgbouncer.pid
INI
  echo '"postgres" ""' >"$RUN/userlist.txt"
  chown -R postgres "$RUN"
  # The Debian package's default service (on 6432 with its own config) is
  # not wanted: this one is ours.
  su postgres -s /bin/sh -c "/usr/sbin/pgbouncer -d '$RUN/pgbouncer.ini'" >&2 ||
    fail "PgBouncer did not start: $(tail -5 "$RUN/pgbouncer.log" 2>/dev/null)"
  for _ in $(seq 50); do up && break; sleep 0.1; done
  up || fail "PgBouncer is not reachable on 127.0.0.1:$PORT: $(tail -5 "$RUN/pgbouncer.log" 2>/dev/null)"
  started=1
  log "PgBouncer (transaction pooling) on 127.0.0.1:$PORT"
fi
echo "export PARLEY_TEST_PGBOUNCER='postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=disable'"
echo "export PARLEY_PGBOUNCER_STARTED=$started"
