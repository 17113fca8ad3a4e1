#!/usr/bin/env bash
# cpuper.sh: requests per second and CPU time per request, of the example
# server and of the PostgreSQL backends of its database, for each operation of
# tools/loadtest given, against a fresh PostgreSQL database seeded with
# SIZE messages in conv_big. CPU time is utime+stime of /proc/PID/stat
# (fields 14 and 15, in ticks of 10 ms) before and after each load,
# divided by its requests: steadier than req/s on a shared machine.
# Everything it starts or creates it stops and removes.
#
#   bash tools/cpuper.sh react create              # 32 connections, 8 s each
#   CONNS=1 bash tools/cpuper.sh react             # one caller at a time
#   SIZE=100000 REACTED=3 bash tools/cpuper.sh list  # a first page of which 3 messages have a reaction
#   REACTORS=10000 bash tools/cpuper.sh react      # the message reacted to has 10,000 reactors of "tada"
#   PGSS=1 bash tools/cpuper.sh create             # and the statements of each load, from pg_stat_statements
#   VIA=127.0.0.1:6432 DSNPARAMS=default_query_exec_mode=exec bash tools/cpuper.sh create  # the server through PgBouncer
#
# The backends are those connected to the load's database when it begins
# (pg_stat_activity; not other sessions' work, nor a backend that connects
# during the load: a line says when the set changed). Through VIA they are
# the pooler's server connections, and PgBouncer's own CPU (pgrep -x
# pgbouncer, user postgres) is printed apart.
#
# PGSS=1 needs a server that loads pg_stat_statements (shared_preload_libraries,
# then a restart): per statement it prints calls, total and mean execution time,
# rows, shared buffers hit and WAL records, the query grouped by its first 40
# characters (the numbering UPDATEs differ only in their length).
#
# PostgreSQL comes from PARLEY_BENCH_POSTGRES (default: the local server
# with trust auth); the server must run on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: cpuper.sh OP..." >&2; exit 2; }
SIZE=${SIZE:-1000}
CONNS=${CONNS:-32}
DUR=${DUR:-8s}
REACTED=${REACTED:-0}
REACTORS=${REACTORS:-0}
PG=${PARLEY_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}

tmp=$(mktemp -d)
db=parley_cpuper_$$_$RANDOM
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  psql "$PG" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap "exit 130" INT TERM

go build -o "$tmp/parley" ./examples/server
go build -o "$tmp/loadtest" ./tools/loadtest
psql "$PG" -qc "CREATE DATABASE $db" >/dev/null
dsn=${PG/\/postgres\?/\/$db?}
"$tmp/loadtest" -seed "$SIZE" -conv conv_big -user alice -db "$dsn" | tail -1
if [ "$REACTORS" -gt 0 ]; then
  # REACTORS reactors of "tada" on the newest message of conv_big (the
  # one react reacts to), with the counters as the store keeps them.
  psql "$dsn" -q -v ON_ERROR_STOP=1 >/dev/null <<SQL
CREATE TEMP TABLE m AS SELECT id FROM messages WHERE conversation_id = 'conv_big' ORDER BY created_at DESC, id DESC LIMIT 1;
INSERT INTO contacts (id, username, phone_number, avatar_url, created_at)
  SELECT 'ctc_reactor' || g, 'reactor' || g, '', '', now() FROM generate_series(1, $REACTORS) g;
INSERT INTO reaction_names (message_id, name) SELECT id, 'tada' FROM m;
INSERT INTO reactions (message_id, name, contact_id, created_at)
  SELECT m.id, 'tada', 'ctc_reactor' || g, now() FROM m, generate_series(1, $REACTORS) g ORDER BY g;
UPDATE reaction_names AS n SET reactors = $REACTORS, head_seq = COALESCE((SELECT r.seq FROM reactions AS r
  WHERE r.message_id = n.message_id AND r.name = 'tada' ORDER BY r.seq LIMIT 1 OFFSET 99), 9223372036854775807)
  FROM m WHERE n.message_id = m.id;
UPDATE messages SET reaction_count = 1 FROM m WHERE messages.id = m.id;
SQL
fi
psql "$dsn" -qc 'VACUUM ANALYZE'
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
# The server's DSN: through VIA (host:port of a pooler in front of the
# server, e.g. PgBouncer on 127.0.0.1:6432) and with DSNPARAMS added
# (e.g. default_query_exec_mode=exec); seeding and psql go direct.
sdsn=$dsn
[ -n "${VIA:-}" ] && sdsn=$(echo "$sdsn" | sed -E "s#@[^/]+/#@$VIA/#")
[ -n "${DSNPARAMS:-}" ] && sdsn="$sdsn&$DSNPARAMS"
"$tmp/parley" -addr "127.0.0.1:$port" -data "$tmp/data" -db "$sdsn" >/dev/null 2>"$tmp/parley.log" &
pid=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done

if [ "$REACTED" -gt 0 ]; then
  auth='Authorization: Bearer alice-secret'
  for id in $(curl -s -H "$auth" "$url/v1/messages?conversation_id=conv_big&limit=$REACTED" |
    python3 -c 'import json, sys; [print(m["id"]) for m in json.load(sys.stdin)["data"]]'); do
    curl -s -o /dev/null -X PUT -H "$auth" -d 'reactions[heart][]=alice' "$url/v1/messages/$id"
  done
fi

. tools/cputicks.sh # ticks PID...: their CPU ticks
"$tmp/loadtest" -url "$url" -ops "$1" -c "$CONNS" -d 2s -rounds 1 >/dev/null 2>&1 # warm-up
PGSS=${PGSS:-}
[ -n "$PGSS" ] && psql "$dsn" -qc 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements' >/dev/null
for op in "$@"; do
  [ -n "$PGSS" ] && psql "$dsn" -qAtc 'SELECT pg_stat_statements_reset()' >/dev/null
  backends() { psql "$dsn" -qAtc "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() ORDER BY pid" | tr '\n' ' '; }
  bpids=$([ -n "${VIA:-}" ] && pgrep -u postgres -x pgbouncer || true)
  pids=$(backends)
  s0=$(ticks "$pid"); p0=$(ticks $pids); b0=$(ticks $bpids)
  out=$("$tmp/loadtest" -url "$url" -ops "$op" -c "$CONNS" -d "$DUR" -rounds 1 2>&1)
  s1=$(ticks "$pid"); p1=$(ticks $pids); b1=$(ticks $bpids)
  [ "$(backends)" = "$pids" ] || echo "(the backends changed during the load: $pids -> $(backends))"
  read -r rps n < <(echo "$out" | awk -v op="$op" '$1 == op && $2 == "A" && $3 ~ /^[0-9.]+$/ { print $3, $9; exit }')
  printf '%-7s %9s req/s   server %5d µs/request   backends %5d µs/request   (%s requests, %d connections)\n' \
    "$op" "$rps" $(((s1 - s0) * 10000 / n)) $(((p1 - p0) * 10000 / n)) "$n" "$CONNS"
  [ -n "$bpids" ] && printf '%-7s %9s        pgbouncer %5d µs/request\n' "" "" $(((b1 - b0) * 10000 / n))
  if [ -n "$PGSS" ]; then
    psql "$dsn" -c "SELECT sum(calls) AS calls, round(sum(total_exec_time)::numeric, 1) AS total_ms,
        round((sum(total_exec_time) / sum(calls) * 1000)::numeric) AS mean_us, sum(rows) AS rows,
        sum(shared_blks_hit) AS blks_hit, sum(wal_records) AS wal_records,
        left(regexp_replace(query, '\s+', ' ', 'g'), 40) AS query
      FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND query NOT LIKE '%pg_stat_statements%'
      GROUP BY 7 ORDER BY 2 DESC LIMIT ${PGSS_LIMIT:-12}"
  fi
done
