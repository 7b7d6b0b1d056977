#!/usr/bin/env bash
# Starts a scratch PostgreSQL cluster on loopback for the tests and benches
# (Debian's server binaries; run as root, the server as the `postgres`
# user), unless one answers already, and prints its URL. The cluster lives
# in $FORQ_PG_DIR (default /var/tmp/forq-pg) on port $FORQ_PG_PORT (55432);
# it trusts loopback connections and nothing else. fsync is off: the
# tests make many databases, and a crash of this machine loses nothing
# they need.
set -euo pipefail
dir=${FORQ_PG_DIR:-/var/tmp/forq-pg}
port=${FORQ_PG_PORT:-55432}
url="postgres://postgres@127.0.0.1:$port/postgres"
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bin" ] || { echo "no PostgreSQL server: apt-get install postgresql" >&2; exit 1; }
# --clean: drop the databases tests and benches made before (forq_*).
clean() {
  [ "${1:-}" = "--clean" ] || return 0
  "$bin/psql" -qAt "$url" -c "SELECT datname FROM pg_database WHERE datname LIKE 'forq\_%'" |
    while read -r db; do "$bin/psql" -q "$url" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"; done
}
if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" 2>/dev/null; then
  clean "${1:-}"
  echo "$url"
  exit 0
fi
as_pg() { runuser -u postgres -- "$@"; }
if [ ! -f "$dir/PG_VERSION" ]; then
  rm -rf "$dir"
  mkdir -p "$dir"
  chown postgres:postgres "$dir"
  as_pg "$bin/initdb" -D "$dir" -U postgres --auth=trust -E UTF8 >/dev/null
fi
# Many tests open a store at once, each on a database of its own.
as_pg "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $port -c max_connections=400 -c fsync=off -c unix_socket_directories=$dir" start >/dev/null
clean "${1:-}"
echo "$url"
