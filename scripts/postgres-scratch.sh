#!/usr/bin/env bash
# Starts a scratch PostgreSQL cluster on loopback for the tests and benches
# (Debian's server binaries; run as root, the server as the `postgres`
# user), unless one answers already, and prints its URL. The cluster lives
# in $FORQ_PG_DIR (default /var/tmp/forq-pg) on port $FORQ_PG_PORT (55432);
# it trusts loopback connections and nothing else. fsync is off: the
# tests make many databases, and a crash of this machine loses nothing
# they need.
#
# The server speaks TLS too, with a certificate for 127.0.0.1 and
# localhost signed by a scratch CA made here: the CA's certificate is
# ca.crt beside the server's (`SHOW ssl_cert_file` names that), which the
# store's TLS test trusts with ?sslrootcert=.
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
# TLS on, with the scratch CA's certificate (made once); a reload turns it
# on in a server that was started without it.
tls() {
  local t="$dir/tls"
  if [ ! -f "$t/server.crt" ]; then
    mkdir -p "$t"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=forq scratch CA" \
      -keyout "$t/ca.key" -out "$t/ca.crt" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
      -keyout "$t/server.key" -out "$t/server.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$t/ext"
    openssl x509 -req -in "$t/server.csr" -CA "$t/ca.crt" -CAkey "$t/ca.key" -CAcreateserial \
      -days 3650 -extfile "$t/ext" -out "$t/server.crt" 2>/dev/null
    chown -R postgres:postgres "$t"
    chmod 600 "$t/server.key" "$t/ca.key"
  fi
  "$bin/psql" -qAt "$url" >/dev/null <<SQL
ALTER SYSTEM SET ssl_cert_file = '$t/server.crt';
ALTER SYSTEM SET ssl_key_file = '$t/server.key';
ALTER SYSTEM SET ssl = on;
SELECT pg_reload_conf();
SQL
}
if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" 2>/dev/null; then
  tls
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
tls
clean "${1:-}"
echo "$url"
