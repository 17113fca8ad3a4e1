#!/usr/bin/env bash
# Starts (or reuses) a throwaway Azurite (the Azure Storage emulator, npm
# package azurite) on 127.0.0.1 for the Azure blob tests, and prints the
# environment the tests need as export lines on stdout; everything else
# goes to stderr. As .ci/minio.sh does for MinIO:
#
#   eval "$(bash .ci/azurite.sh)"   # start or reuse; sets PARLEY_TEST_AZURE & co.
#   bash .ci/azurite.sh stop        # stop it
#
# Azurite is installed once with npm into
# ${PARLEY_TOOLS:-$HOME/.cache/parley-tools}; it keeps its data in memory.
# PARLEY_AZURITE_STARTED=1 says that this call started it.
set -euo pipefail

VERSION=3.35.0 # the last that runs on Node.js 20
TOOLS=${PARLEY_TOOLS:-$HOME/.cache/parley-tools}
DIR=$TOOLS/azurite-$VERSION
RUN=$TOOLS/azurite-run
ACCOUNT=devstoreaccount1
# Azurite's well-known development key (not a secret).
KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

cd "$(dirname "$0")/.."
log() { printf 'azurite.sh: %s\n' "$*" >&2; }
fail() { log "$*"; exit 1; }
running() { [ -f "$RUN/pid" ] && kill -0 "$(cat "$RUN/pid")" 2>/dev/null; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

stop() {
  if running; then
    log "stopping Azurite (pid $(cat "$RUN/pid"))"
    kill "$(cat "$RUN/pid")" || true
  fi
  rm -rf "$RUN"
}
if [ "${1:-}" = stop ]; then stop; exit 0; fi
[ $# -eq 0 ] || fail "usage: azurite.sh [stop]"

if [ ! -x "$DIR/node_modules/.bin/azurite-blob" ]; then
  command -v npm >/dev/null || fail "npm is needed to install Azurite (apt-get install npm)"
  log "installing azurite@$VERSION into $DIR"
  mkdir -p "$DIR"
  npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "azurite@$VERSION" >&2 \
    || fail "npm install azurite@$VERSION failed"
fi

STARTED=0
if running && [ -f "$RUN/port" ] && listening "$(cat "$RUN/port")"; then
  PORT=$(cat "$RUN/port")
  log "reusing Azurite on 127.0.0.1:$PORT"
else
  stop
  mkdir -p "$RUN"
  PORT=10000
  while listening "$PORT"; do
    PORT=$((PORT + 1))
    [ "$PORT" -lt 10400 ] || fail "no free port between 10000 and 10400"
  done
  echo "$PORT" > "$RUN/port"
  setsid "$DIR/node_modules/.bin/azurite-blob" --blobHost 127.0.0.1 --blobPort "$PORT" \
    --inMemoryPersistence --loose --skipApiVersionCheck --disableProductStyleUrl \
    </dev/null >"$RUN/azurite.log" 2>&1 &
  echo $! > "$RUN/pid"
  STARTED=1
  log "starting Azurite on 127.0.0.1:$PORT (pid $!, log $RUN/azurite.log)"
  for _ in $(seq 100); do
    listening "$PORT" && break
    running || { cat "$RUN/azurite.log" >&2; fail "Azurite exited"; }
    sleep 0.2
  done
  listening "$PORT" || fail "Azurite does not listen after 20 s"
fi

cat <<EOF2
export PARLEY_TEST_AZURE='azblob://parley-test?protocol=http&domain=127.0.0.1:$PORT&localemu=true'
export AZURE_STORAGE_ACCOUNT='$ACCOUNT'
export AZURE_STORAGE_KEY='$KEY'
export PARLEY_AZURITE_STARTED=$STARTED
EOF2
