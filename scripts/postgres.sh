# Shared by scripts/test (sourced, not run), like scripts/moto.sh: start a throwaway
# PostgreSQL server for the inventory tests and export TOLLGATE_TEST_POSTGRES_URL.
#
# The cluster is initialised in a temporary directory with the Debian server binaries
# (/usr/lib/postgresql/<version>/bin, the newest installed; PG_BINDIR overrides), listens
# on 127.0.0.1 on a free port and on a Unix socket in that directory, and holds one
# database, `tollgate_test`. Its user `tollgate` has a random password, required over TCP
# (scram-sha-256: the tests check that a wrong one is refused and never printed) and not
# on the socket, which only the cluster's owner can open. initdb and the server refuse to run as root, so as root they run as
# the `postgres` OS user (runuser, or su), which owns the temporary directory.
# TOLLGATE_TEST_POSTGRES_URL already set means "use that server": nothing is started.
#
# stop_postgres stops the server and removes the directory. Callers set
# POSTGRES_LOG_PREFIX for messages; unlike moto.sh this sets no EXIT trap of its own
# (the caller's trap calls stop_postgres), so it composes with the other servers' traps.

POSTGRES_DIR=
POSTGRES_STARTED=

# The directory of initdb and pg_ctl: PG_BINDIR, the newest /usr/lib/postgresql/*/bin,
# or the PATH.
find_postgres_bindir() {
    if [ -n "${PG_BINDIR:-}" ] && [ -x "$PG_BINDIR/initdb" ]; then
        echo "$PG_BINDIR"
        return 0
    fi
    local dir
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
        if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
            echo "$dir"
            return 0
        fi
    done
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
    fi
}

# Runs a command as the user who owns the cluster: ourselves, or `postgres` when root.
postgres_as_owner() {
    if [ "$(id -u)" != 0 ]; then
        "$@"
    elif command -v runuser >/dev/null 2>&1; then
        runuser -u postgres -- "$@"
    else
        su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
    fi
}

start_postgres() {
    if [ -n "${TOLLGATE_TEST_POSTGRES_URL:-}" ]; then
        echo "${POSTGRES_LOG_PREFIX:-postgres}: using the server at TOLLGATE_TEST_POSTGRES_URL"
        return 0
    fi
    local bindir
    bindir=$(find_postgres_bindir)
    if [ -z "$bindir" ]; then
        echo "${POSTGRES_LOG_PREFIX:-postgres}: no PostgreSQL server binaries (initdb, pg_ctl) found: install Debian's postgresql package, or set TOLLGATE_TEST_POSTGRES_URL to a running server" >&2
        return 1
    fi
    if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
        echo "${POSTGRES_LOG_PREFIX:-postgres}: running as root and there is no postgres OS user to run the server as (initdb refuses root): install Debian's postgresql package, or set TOLLGATE_TEST_POSTGRES_URL" >&2
        return 1
    fi
    POSTGRES_DIR=$(mktemp -d "${TMPDIR:-/tmp}/tollgate-postgres.XXXXXX")
    if [ "$(id -u)" = 0 ]; then
        chown postgres: "$POSTGRES_DIR"
    fi
    chmod 0700 "$POSTGRES_DIR"
    local port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    local password
    password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
    (umask 077 && printf '%s\n' "$password" >"$POSTGRES_DIR/pwfile")
    if [ "$(id -u)" = 0 ]; then
        chown postgres: "$POSTGRES_DIR/pwfile"
    fi
    if ! postgres_as_owner "$bindir/initdb" -D "$POSTGRES_DIR/data" -U tollgate --pwfile="$POSTGRES_DIR/pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C >"$POSTGRES_DIR/initdb.log" 2>&1; then
        echo "${POSTGRES_LOG_PREFIX:-postgres}: initdb failed; its log:" >&2
        cat "$POSTGRES_DIR/initdb.log" >&2
        stop_postgres
        return 1
    fi
    # fsync off: a test cluster is thrown away, and durability costs the suite time.
    if ! postgres_as_owner "$bindir/pg_ctl" -D "$POSTGRES_DIR/data" -l "$POSTGRES_DIR/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$POSTGRES_DIR -c fsync=off -c max_connections=200" \
        start >/dev/null; then
        echo "${POSTGRES_LOG_PREFIX:-postgres}: the server did not start; its log:" >&2
        cat "$POSTGRES_DIR/server.log" >&2
        stop_postgres
        return 1
    fi
    POSTGRES_STARTED=1
    POSTGRES_BINDIR=$bindir
    if ! postgres_as_owner "$bindir/psql" -h "$POSTGRES_DIR" -p "$port" -U tollgate -d postgres -q \
        -c "CREATE DATABASE tollgate_test" >/dev/null 2>"$POSTGRES_DIR/createdb.log"; then
        echo "${POSTGRES_LOG_PREFIX:-postgres}: cannot create the test database; psql said:" >&2
        cat "$POSTGRES_DIR/createdb.log" >&2
        stop_postgres
        return 1
    fi
    export TOLLGATE_TEST_POSTGRES_URL="postgres://tollgate:$password@127.0.0.1:$port/tollgate_test"
    # The password is not printed.
    echo "${POSTGRES_LOG_PREFIX:-postgres}: $("$bindir/postgres" --version 2>/dev/null) at postgres://tollgate:***@127.0.0.1:$port/tollgate_test (socket in $POSTGRES_DIR)"
}

stop_postgres() {
    if [ -n "$POSTGRES_STARTED" ] && [ -n "$POSTGRES_DIR" ]; then
        postgres_as_owner "$POSTGRES_BINDIR/pg_ctl" -D "$POSTGRES_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
        POSTGRES_STARTED=
        unset TOLLGATE_TEST_POSTGRES_URL
    fi
    if [ -n "$POSTGRES_DIR" ]; then
        rm -rf "$POSTGRES_DIR"
        POSTGRES_DIR=
    fi
}
