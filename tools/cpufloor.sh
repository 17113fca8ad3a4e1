#!/usr/bin/env bash
# cpufloor.sh: CPU time per request on PostgreSQL of the example server
# built from each commit given and of the floor (../shared/bench/floor),
# side by side: each on a fresh database seeded with SIZE messages in
# conv_big, loaded in turn round by round (tools/loadtest, CONNS
# connections). CPU time is utime+stime of /proc/PID/stat of the server
# and of the PostgreSQL backends of its database, before and after each
# load, divided by its requests: steadier than req/s on a shared machine.
# Everything it starts or creates it stops and removes.
#
#   bash tools/cpufloor.sh 2aef7df HEAD              # first and deep pages
#   OPS=create ROUNDS=2 bash tools/cpufloor.sh HEAD  # creates
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: cpufloor.sh COMMIT..." >&2; exit 2; }
SIZE=${SIZE:-100000}
DEPTH=${DEPTH:-9000}
OPS=${OPS:-list deep}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-8s}
CONNS=${CONNS:-32}
FLOOR_SRC=${FLOOR_SRC:-../shared/bench/floor}
PG=${PARLEY_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}

tmp=$(mktemp -d)
pids=()
dbs=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for d in "${dbs[@]}"; do psql "$PG" -qc "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null 2>&1 || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap "exit 130" INT TERM

go build -o "$tmp/loadtest" ./tools/loadtest
(cd "$FLOOR_SRC" && go build -o "$tmp/floor" .)
names=()
for rev in "$@"; do
  names+=("$rev")
  mkdir -p "$tmp/src/$rev"
  git archive "$rev" | tar -x -C "$tmp/src/$rev"
  (cd "$tmp/src/$rev" && go build -o "$tmp/parley-$rev" ./examples/server)
done
names+=(floor)

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
declare -A url spid db
for i in "${!names[@]}"; do
  name=${names[$i]} d=parley_cpufloor_$$_$i
  psql "$PG" -qc "CREATE DATABASE $d" >/dev/null
  dbs+=("$d")
  dsn=${PG/\/postgres\?/\/$d?}
  if [ "$name" = floor ]; then
    "$tmp/floor" -db pg -dsn "$dsn" -seed "$SIZE" -seed-conv conv_big | tail -1
  else
    "$tmp/loadtest" -seed "$SIZE" -conv conv_big -user alice -db "$dsn" | tail -1
  fi
  psql "$dsn" -qc 'VACUUM ANALYZE'
  p=$(port)
  if [ "$name" = floor ]; then
    mkdir -p "$tmp/files-$i"
    "$tmp/floor" -db pg -dsn "$dsn" -files "$tmp/files-$i" -addr "127.0.0.1:$p" >/dev/null 2>"$tmp/$i.log" &
  else
    "$tmp/parley-$name" -addr "127.0.0.1:$p" -data "$tmp/data-$i" -db "$dsn" >/dev/null 2>"$tmp/$i.log" &
  fi
  pids+=($!)
  url[$name]=http://127.0.0.1:$p spid[$name]=$! db[$name]=$d
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break; sleep 0.1; done
done

. tools/cputicks.sh # ticks PID...: their CPU ticks
for op in $OPS; do
  for r in $(seq "$ROUNDS"); do
    for name in "${names[@]}"; do
      load=("$tmp/loadtest" -url "${url[$name]}" -ops "$op" -depth "$DEPTH" -c "$CONNS" -rounds 1)
      "${load[@]}" -d 1s >/dev/null 2>&1 # warm-up: the pool's connections
      backends=$(psql "$PG" -qAtc "SELECT pid FROM pg_stat_activity WHERE datname = '${db[$name]}'" | tr '\n' ' ')
      s0=$(ticks "${spid[$name]}"); b0=$(ticks $backends)
      out=$("${load[@]}" -d "$DUR" -warmup 0s 2>&1)
      s1=$(ticks "${spid[$name]}"); b1=$(ticks $backends)
      read -r rps n < <(echo "$out" | awk -v op="$op" '$1 == op && $2 == "A" && $3 ~ /^[0-9.]+$/ { print $3, $9; exit }')
      printf '%-7s round %d  %-10s %8s req/s   server %4d   backends %4d   all %4d µs/request   load %s\n' \
        "$op" "$r" "$name" "$rps" $(((s1 - s0) * 10000 / n)) $(((b1 - b0) * 10000 / n)) \
        $(((s1 - s0 + b1 - b0) * 10000 / n)) "$(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
