#!/usr/bin/env bash
# benchfloor.sh: Parley against the floor of its stack (../shared/bench/floor),
# in one run, from a clean clone: it builds the example server, the load
# generator (tools/loadtest) and the floor, seeds the same conversation of
# SIZE messages into a fresh database of each, starts both servers on
# loopback, loads them alternately round by round (A = Parley, B = the
# floor), and prints the figures and the ratios of the performance targets.
# Everything it starts or creates it stops and removes, however it ends.
#
#   bash tools/benchfloor.sh                 # SQLite and PostgreSQL
#   bash tools/benchfloor.sh sqlite          # one engine
#   SIZE=1000000 DEPTH=100000 ROUNDS=3 DUR=10s bash tools/benchfloor.sh postgres
#   SIZE=1000 OPS=create ALONE= bash tools/benchfloor.sh postgres   # creates only
#   bash tools/benchfloor.sh mysql           # MySQL/MariaDB: Parley alone (the floor has no MySQL)
#
# PostgreSQL comes from PARLEY_BENCH_POSTGRES (default: the local server
# with trust auth, postgres://postgres@127.0.0.1:5432/postgres); two
# databases are created in it and dropped at the end. MySQL/MariaDB comes
# from PARLEY_BENCH_MYSQL (default: root with no password on
# 127.0.0.1:3306), through the mysql client; one database is created in it
# and dropped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

ENGINES=${1:-sqlite postgres}
SIZE=${SIZE:-100000}     # messages in the conversation that is read
DEPTH=${DEPTH:-9000}     # how deep the cursor page is
ROUNDS=${ROUNDS:-3}      # alternating rounds of each operation
DUR=${DUR:-5s}           # measured time of one run
CONNS=${CONNS:-32}
OPS=${OPS:-create,list,deep}              # loaded against the floor
ALONE=${ALONE-list,deep,create,react}     # loaded on Parley alone ("" for none)
FLOOR_SRC=${FLOOR_SRC:-../shared/bench/floor}
PG=${PARLEY_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
MY=${PARLEY_BENCH_MYSQL:-mysql://root@127.0.0.1:3306}
# mysqlcli runs the mysql client on MY's server (user, password, host, port).
mysqlcli() {
  local rest=${MY#mysql://} cred host user pass
  cred=${rest%@*}; host=${rest#*@}; host=${host%%/*}
  user=${cred%%:*}; pass=; [ "$cred" != "$user" ] && pass=${cred#*:}
  MYSQL_PWD=$pass mysql -u "$user" -h "${host%:*}" -P "${host##*:}" "$@"
}

[ -d "$FLOOR_SRC" ] || { echo "benchfloor: no floor at $FLOOR_SRC (set FLOOR_SRC)" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
dbs=()
mydbs=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for d in "${dbs[@]}"; do psql "$PG" -qc "DROP DATABASE IF EXISTS $d" >/dev/null 2>&1 || true; done
  for d in "${mydbs[@]}"; do mysqlcli -e "DROP DATABASE IF EXISTS $d" >/dev/null 2>&1 || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap "exit 130" INT TERM

echo "== building (the first build of a clean clone takes minutes)"
go build -o "$tmp/parley" ./examples/server
go build -o "$tmp/loadtest" ./tools/loadtest
(cd "$FLOOR_SRC" && go build -o "$tmp/floor" .)

# port prints a loopback port that is free now.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
  echo $((20000 + RANDOM % 20000)); }
wait_up() {
  for _ in $(seq 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "benchfloor: nothing listens on port $1" >&2
  exit 1
}

for engine in $ENGINES; do
  echo
  echo "== $engine: seeding $SIZE messages into conv_big of each"
  case $engine in
  sqlite)
    pdsn="$tmp/sqlite/parley.db"; fkind=sqlite; fdsn="$tmp/sqlite/floor.db"
    mkdir -p "$tmp/sqlite"
    ;;
  postgres)
    suffix=$$_$RANDOM
    for d in parley_bench_$suffix floor_bench_$suffix; do
      psql "$PG" -qc "CREATE DATABASE $d" >/dev/null
      dbs+=("$d")
    done
    pdsn=${PG/\/postgres\?/\/parley_bench_$suffix?}; fkind=pg; fdsn=${PG/\/postgres\?/\/floor_bench_$suffix?}
    ;;
  mysql)
    d=parley_bench_$$_$RANDOM
    mysqlcli -e "CREATE DATABASE $d"
    mydbs+=("$d")
    pdsn=$MY/$d; fkind= # no floor
    ;;
  *) echo "benchfloor: unknown engine $engine (sqlite, postgres or mysql)" >&2; exit 2 ;;
  esac
  "$tmp/loadtest" -seed "$SIZE" -conv conv_big -user alice -db "$pdsn" | tail -1
  [ -z "$fkind" ] || "$tmp/floor" -db "$fkind" -dsn "$fdsn" -seed "$SIZE" -seed-conv conv_big | tail -1
  if [ "$engine" = postgres ]; then
    psql "${pdsn}" -qc 'VACUUM ANALYZE' && psql "${fdsn}" -qc 'VACUUM ANALYZE'
  fi

  pport=$(port); fport=$(port)
  "$tmp/parley" -addr "127.0.0.1:$pport" -data "$tmp/$engine/parley-data" -db "$pdsn" >/dev/null 2>"$tmp/$engine-parley.log" &
  pids+=($!)
  wait_up "$pport"
  : >"$tmp/$engine-floor.txt"
  if [ -n "$fkind" ]; then
    mkdir -p "$tmp/$engine/floor-files"
    "$tmp/floor" -db "$fkind" -dsn "$fdsn" -files "$tmp/$engine/floor-files" -addr "127.0.0.1:$fport" >/dev/null 2>"$tmp/$engine-floor.log" &
    pids+=($!)
    wait_up "$fport"

    echo "== $engine: Parley (A) against the floor (B), $ROUNDS alternating rounds of $DUR, $CONNS connections"
    "$tmp/loadtest" -url "http://127.0.0.1:$pport" -compare "http://127.0.0.1:$fport" \
      -ops "$OPS" -depth "$DEPTH" -c "$CONNS" -d "$DUR" -rounds "$ROUNDS" | tee "$tmp/$engine-floor.txt"
  fi

  # react last: the message it reacts to is on the first page, which would
  # then carry a reaction that the floor's pages have not.
  : >"$tmp/$engine-alone.txt"
  if [ -n "$ALONE" ]; then
    echo "== $engine: Parley alone: a reaction added and taken back, against a create"
    "$tmp/loadtest" -url "http://127.0.0.1:$pport" -ops "$ALONE" -depth "$DEPTH" \
      -c "$CONNS" -d "$DUR" -rounds "$ROUNDS" | tee "$tmp/$engine-alone.txt"
  fi

  # The targets of the performance issue, from the summary tables above:
  # the median req/s is the third column of an op's row.
  rps() { awk -v op="$1" -v who="$2" '$1 == op && $2 == who && $3 ~ /^[0-9.]+$/ { print $3; exit }' "$3"; }
  ratio() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "n/a" }'; }
  echo
  echo "== $engine: targets"
  printf '  %-48s %6s  (target %s)\n' \
    "create, Parley / floor" "$(ratio "$(rps create A "$tmp/$engine-floor.txt")" "$(rps create B "$tmp/$engine-floor.txt")")" ">= 0.9 on PostgreSQL" \
    "first page, Parley / floor" "$(ratio "$(rps list A "$tmp/$engine-floor.txt")" "$(rps list B "$tmp/$engine-floor.txt")")" ">= 0.8" \
    "first page / cursor page $DEPTH deep, Parley" "$(ratio "$(rps list A "$tmp/$engine-alone.txt")" "$(rps deep A "$tmp/$engine-alone.txt")")" "<= 1.2" \
    "reaction / create, Parley" "$(ratio "$(rps react A "$tmp/$engine-alone.txt")" "$(rps create A "$tmp/$engine-alone.txt")")" ">= 0.5"

  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
done
