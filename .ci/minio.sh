#!/usr/bin/env bash
# Starts (or reuses) a throwaway MinIO server on 127.0.0.1 for the S3 tests,
# makes sure the test bucket exists, and prints the environment the tests
# need as export lines on stdout; everything else goes to stderr.
#
#   eval "$(bash .ci/minio.sh)"     # start or reuse; sets PARLEY_TEST_S3 & co.
#   go test ./storage/blobstore/...
#   bash .ci/minio.sh stop          # stop it and remove its data
#
# The MinIO binary is built once from its Go module (about two minutes) into
# ${PARLEY_TOOLS:-$HOME/.cache/parley-tools}, which survives between runs.
# The server keeps running after this script exits, so the next run reuses
# it (its pid, port and data directory are in $PARLEY_TOOLS/minio-run/);
# PARLEY_MINIO_STARTED=1 says that this call started it (.ci/run then
# stops it when it ends).
# It listens on 127.0.0.1:9000 (console 9001) when free, else on the next
# free ports; its data lives in a temporary directory.
set -euo pipefail

MINIO_MODULE=github.com/minio/minio
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
TOOLS=${PARLEY_TOOLS:-$HOME/.cache/parley-tools}
BIN_DIR=$TOOLS/minio-$MINIO_VERSION
BIN=$BIN_DIR/minio
RUN=$TOOLS/minio-run
BUCKET=parley-test
USER_NAME=parley
PASSWORD=parley-test-secret
REGION=us-east-1

cd "$(dirname "$0")/.."
log() { printf 'minio.sh: %s\n' "$*" >&2; }
fail() { log "$*"; exit 1; }

live() { curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$1/minio/health/live" 2>/dev/null; }
running() { [ -f "$RUN/pid" ] && kill -0 "$(cat "$RUN/pid")" 2>/dev/null; }
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

stop() {
  if running; then
    pid=$(cat "$RUN/pid")
    log "stopping MinIO (pid $pid)"
    kill "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  [ -f "$RUN/data" ] && rm -rf "$(cat "$RUN/data")"
  rm -rf "$RUN"
}

if [ "${1:-}" = stop ]; then
  stop
  exit 0
fi
[ $# -eq 0 ] || fail "usage: minio.sh [stop]"

# 1. The binary, built only when missing.
if [ ! -x "$BIN" ]; then
  log "building MinIO $MINIO_VERSION into $BIN_DIR (about two minutes, once)"
  mkdir -p "$BIN_DIR"
  start=$(date +%s)
  # Outside the module, so that its go.mod is not touched.
  (cd / && GOBIN=$BIN_DIR go install "$MINIO_MODULE@$MINIO_VERSION") >&2 \
    || fail "go install $MINIO_MODULE@$MINIO_VERSION failed"
  log "built in $(( $(date +%s) - start )) s"
fi

# 2. The server: reuse a live one of ours, else start one.
STARTED=0
if running && [ -f "$RUN/port" ] && live "$(cat "$RUN/port")"; then
  PORT=$(cat "$RUN/port")
  log "reusing MinIO on 127.0.0.1:$PORT (pid $(cat "$RUN/pid"))"
else
  stop
  mkdir -p "$RUN"
  PORT=9000
  while ! port_free "$PORT" || ! port_free $((PORT + 1)); do
    PORT=$((PORT + 2))
    [ "$PORT" -lt 9400 ] || fail "no free port pair between 9000 and 9400"
  done
  DATA=$(mktemp -d "${TMPDIR:-/tmp}/parley-minio.XXXXXX")
  echo "$DATA" > "$RUN/data"
  echo "$PORT" > "$RUN/port"
  # Detached from this script's stdout, so that $(...) does not wait for it.
  MINIO_ROOT_USER=$USER_NAME MINIO_ROOT_PASSWORD=$PASSWORD MINIO_UPDATE=off \
    setsid "$BIN" server --quiet --address "127.0.0.1:$PORT" \
    --console-address "127.0.0.1:$((PORT + 1))" "$DATA/data" \
    </dev/null >"$RUN/minio.log" 2>&1 &
  echo $! > "$RUN/pid"
  STARTED=1
  log "starting MinIO on 127.0.0.1:$PORT (pid $!, data $DATA, log $RUN/minio.log)"
  for _ in $(seq 100); do
    live "$PORT" && break
    running || { cat "$RUN/minio.log" >&2; fail "MinIO exited"; }
    sleep 0.3
  done
  live "$PORT" || { cat "$RUN/minio.log" >&2; fail "MinIO is not live after 30 s"; }
fi

# 3. The bucket.
export AWS_ACCESS_KEY_ID=$USER_NAME AWS_SECRET_ACCESS_KEY=$PASSWORD AWS_REGION=$REGION
export AWS_EC2_METADATA_DISABLED=true
URL="s3://$BUCKET?endpoint=http://127.0.0.1:$PORT&use_path_style=true&region=$REGION"
go run ./tools/mkbucket "$URL" >&2 || fail "cannot create bucket $BUCKET"
log "bucket $BUCKET ready"

# 4. What the tests need.
cat <<EOF
export PARLEY_TEST_S3='$URL'
export AWS_ACCESS_KEY_ID='$USER_NAME'
export AWS_SECRET_ACCESS_KEY='$PASSWORD'
export AWS_REGION='$REGION'
export AWS_EC2_METADATA_DISABLED=true
export PARLEY_MINIO_PID='$(cat "$RUN/pid")'
export PARLEY_MINIO_STARTED=$STARTED
EOF
