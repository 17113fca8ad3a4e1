#!/usr/bin/env bash
# Runs staticcheck on the module, installing it first (from its Go module,
# through the module proxy) into ${PARLEY_TOOLS:-$HOME/.cache/parley-tools},
# which survives between runs, as .ci/minio.sh does for MinIO.
set -euo pipefail
cd "$(dirname "$0")/.."

MODULE=honnef.co/go/tools/cmd/staticcheck
VERSION=v0.8.2
TOOLS=${PARLEY_TOOLS:-$HOME/.cache/parley-tools}
BIN_DIR=$TOOLS/staticcheck-$VERSION

if [ ! -x "$BIN_DIR/staticcheck" ]; then
  echo "staticcheck.sh: installing $MODULE@$VERSION into $BIN_DIR" >&2
  mkdir -p "$BIN_DIR"
  # Outside the module, so that its go.mod is not touched.
  (cd / && GOBIN=$BIN_DIR go install "$MODULE@$VERSION") >&2
fi
"$BIN_DIR/staticcheck" ./...
"$BIN_DIR/staticcheck" -tags cloud ./examples/server/... # its files of the cloud build
echo "staticcheck: clean"
