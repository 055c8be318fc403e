#!/usr/bin/env bash
# Starts or stops a throw-away PostgreSQL on a free loopback port for the tests.
#   scripts/pg.sh start DIR   -> prints the admin URL (postgres://postgres@127.0.0.1:PORT/postgres)
#   scripts/pg.sh stop DIR
# GANTRY_PG_CPUS=1 scripts/pg.sh start DIR runs the server on those CPUs only (taskset's list),
# for benchmarks that keep it off the cores of the process they measure.
# Installs PostgreSQL with apt-get when it is missing. Runs the server as user postgres.
set -euo pipefail
cmd=${1:?start|stop}; dir=${2:?directory}

pgbin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$d" ]; then
    echo "PostgreSQL is missing: installing it with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 && apt-get install -y -qq postgresql >&2
    d=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  fi
  echo "$d"
}

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

case "$cmd" in
start)
  bin=$(pgbin)
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then useradd --system --home "$dir" postgres; fi
  mkdir -p "$dir"
  # The server runs as postgres: it must be able to reach and own its directory. Only
  # the right to pass through is added to the parent: a shared one (/tmp) keeps its mode.
  if [ "$(id -u)" = 0 ]; then chmod o+x "$(dirname "$dir")"; chown postgres "$dir"; fi
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  as_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  pin=(); [ -z "${GANTRY_PG_CPUS:-}" ] || pin=(taskset -c "$GANTRY_PG_CPUS")
  as_pg "${pin[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
    -o "-h 127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
  echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
  ;;
stop)
  bin=$(pgbin)
  [ -d "$dir/data" ] && as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
