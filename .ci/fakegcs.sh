#!/usr/bin/env bash
# Starts (or reuses) a throwaway fake-gcs-server (Go module
# github.com/fsouza/fake-gcs-server) on 127.0.0.1 for the Google Cloud
# Storage blob tests, and prints the environment the tests need as export
# lines on stdout; everything else goes to stderr. As .ci/minio.sh does:
#
#   eval "$(bash .ci/fakegcs.sh)"   # start or reuse; sets PARLEY_TEST_GCS & co.
#   bash .ci/fakegcs.sh stop        # stop it
#
# The binary is built once from its Go module (about a minute) into
# ${PARLEY_TOOLS:-$HOME/.cache/parley-tools}; the server keeps its data in
# memory. PARLEY_FAKEGCS_STARTED=1 says that this call started it.
set -euo pipefail

MODULE=github.com/fsouza/fake-gcs-server
VERSION=v1.56.1
TOOLS=${PARLEY_TOOLS:-$HOME/.cache/parley-tools}
BIN=$TOOLS/fake-gcs-server-$VERSION/fake-gcs-server
RUN=$TOOLS/fakegcs-run

cd "$(dirname "$0")/.."
log() { printf 'fakegcs.sh: %s\n' "$*" >&2; }
fail() { log "$*"; exit 1; }
running() { [ -f "$RUN/pid" ] && kill -0 "$(cat "$RUN/pid")" 2>/dev/null; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

stop() {
  if running; then
    log "stopping fake-gcs-server (pid $(cat "$RUN/pid"))"
    kill "$(cat "$RUN/pid")" || true
  fi
  rm -rf "$RUN"
}
if [ "${1:-}" = stop ]; then stop; exit 0; fi
[ $# -eq 0 ] || fail "usage: fakegcs.sh [stop]"

if [ ! -x "$BIN" ]; then
  log "building $MODULE@$VERSION into $(dirname "$BIN") (about a minute, once)"
  mkdir -p "$(dirname "$BIN")"
  (cd / && GOBIN=$(dirname "$BIN") go install "$MODULE@$VERSION") >&2 || fail "go install $MODULE@$VERSION failed"
fi

STARTED=0
if running && [ -f "$RUN/port" ] && listening "$(cat "$RUN/port")"; then
  PORT=$(cat "$RUN/port")
  log "reusing fake-gcs-server on 127.0.0.1:$PORT"
else
  stop
  mkdir -p "$RUN"
  PORT=4443
  while listening "$PORT"; do
    PORT=$((PORT + 1))
    [ "$PORT" -lt 4843 ] || fail "no free port between 4443 and 4843"
  done
  echo "$PORT" > "$RUN/port"
  setsid "$BIN" -scheme http -host 127.0.0.1 -port "$PORT" -backend memory \
    -public-host "127.0.0.1:$PORT" -external-url "http://127.0.0.1:$PORT" -log-level error \
    </dev/null >"$RUN/fakegcs.log" 2>&1 &
  echo $! > "$RUN/pid"
  STARTED=1
  log "starting fake-gcs-server on 127.0.0.1:$PORT (pid $!, log $RUN/fakegcs.log)"
  for _ in $(seq 100); do
    listening "$PORT" && break
    running || { cat "$RUN/fakegcs.log" >&2; fail "fake-gcs-server exited"; }
    sleep 0.2
  done
  listening "$PORT" || fail "fake-gcs-server does not listen after 20 s"
fi

cat <<EOF2
export PARLEY_TEST_GCS='gs://parley-test'
export STORAGE_EMULATOR_HOST='127.0.0.1:$PORT'
export PARLEY_FAKEGCS_STARTED=$STARTED
EOF2
