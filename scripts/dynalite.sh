# Shared by scripts/test (sourced, not run), like scripts/moto.sh: install dynalite (an
# in-memory DynamoDB emulator on node) into .node/ (git-ignored) if missing, start it on a
# free loopback port, export TOLLGATE_TEST_DYNALITE_URL, and stop it on exit.
#
# Why dynalite and not moto's DynamoDB: fleet admission rests on conditional UpdateItem
# being atomic under concurrent writers; dynalite's is, moto's over-granted under
# concurrency (issue 13). dynalite has no TransactWriteItems and no TTL expiry.
#
# Callers set DYNALITE_LOG_PREFIX for messages. Call start_dynalite AFTER start_moto: both
# servers are stopped by one EXIT trap (stop_test_servers), which replaces moto's.
# TOLLGATE_TEST_DYNALITE_URL already set means "use that server".

DYNALITE_PID=
# The dynalite release the fleet tests were written and checked against (4.0.0: atomic
# conditional UpdateItem, no TransactWriteItems, no UpdateTimeToLive). Pinned so that a
# fresh machine installs what was tested; a dynalite already in .node/ is used as it is.
DYNALITE_SPEC="dynalite@4.0.0"

stop_dynalite() {
    if [ -n "$DYNALITE_PID" ]; then
        kill "$DYNALITE_PID" 2>/dev/null || true
        wait "$DYNALITE_PID" 2>/dev/null || true
        DYNALITE_PID=
    fi
}

# One EXIT trap for every emulator this shell started.
stop_test_servers() {
    stop_dynalite
    if declare -F stop_postgres >/dev/null; then
        stop_postgres
    fi
    if declare -F stop_moto >/dev/null; then
        stop_moto
    fi
}

find_dynalite() {
    if [ -x .node/node_modules/.bin/dynalite ]; then
        echo .node/node_modules/.bin/dynalite
    fi
}

# Install node (Debian's packages, as root) and dynalite into .node/ unless
# TOLLGATE_TEST_DYNALITE_URL names a running one or they are installed. Safe to run in a
# background subshell (scripts/test does, while cargo builds).
install_dynalite() {
    if [ -n "${TOLLGATE_TEST_DYNALITE_URL:-}" ]; then
        return 0
    fi
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            echo "$DYNALITE_LOG_PREFIX: installing nodejs and npm (dynalite, the DynamoDB emulator of the fleet tests, runs on node)"
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
        else
            echo "$DYNALITE_LOG_PREFIX: node and npm not found; the fleet tests need dynalite (a DynamoDB emulator on node): install Debian's nodejs and npm packages, or set TOLLGATE_TEST_DYNALITE_URL to a running dynalite" >&2
            exit 1
        fi
    fi
    local dynalite
    dynalite=$(find_dynalite)
    if [ -z "$dynalite" ]; then
        echo "$DYNALITE_LOG_PREFIX: installing $DYNALITE_SPEC into .node/ (DynamoDB emulator for the fleet tests)"
        mkdir -p .node
        if ! npm install --prefix .node --save-exact --no-audit --no-fund --loglevel=error "$DYNALITE_SPEC" >/dev/null; then
            echo "$DYNALITE_LOG_PREFIX: npm install $DYNALITE_SPEC into .node/ failed (see npm's message above); retry, or set TOLLGATE_TEST_DYNALITE_URL to a running dynalite" >&2
            exit 1
        fi
        dynalite=$(find_dynalite)
    fi
    if [ -z "$dynalite" ]; then
        echo "$DYNALITE_LOG_PREFIX: .node/node_modules/.bin/dynalite is still missing after npm install $DYNALITE_SPEC" >&2
        exit 1
    fi
}

start_dynalite() {
    trap stop_test_servers EXIT
    if [ -n "${TOLLGATE_TEST_DYNALITE_URL:-}" ]; then
        return 0
    fi
    install_dynalite
    local dynalite
    dynalite=$(find_dynalite)
    local port
    port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
    mkdir -p target
    # --createTableMs 0: tables are ACTIVE at once (the default waits 500 ms per table).
    "$dynalite" --host 127.0.0.1 --port "$port" --createTableMs 0 >target/dynalite.log 2>&1 &
    DYNALITE_PID=$!
    export TOLLGATE_TEST_DYNALITE_URL="http://127.0.0.1:$port"
    local ready=
    for _ in $(seq 1 150); do
        # Any HTTP answer will do: dynalite answers a bare GET with an error document.
        if node -e 'require("http").get(process.argv[1], r => process.exit(0)).on("error", () => process.exit(1))' \
            "$TOLLGATE_TEST_DYNALITE_URL" 2>/dev/null; then
            ready=1
            break
        fi
        if ! kill -0 "$DYNALITE_PID" 2>/dev/null; then
            echo "$DYNALITE_LOG_PREFIX: dynalite exited; its log:" >&2
            cat target/dynalite.log >&2
            exit 1
        fi
        sleep 0.2
    done
    if [ -z "$ready" ]; then
        echo "$DYNALITE_LOG_PREFIX: dynalite (pid $DYNALITE_PID) did not answer at $TOLLGATE_TEST_DYNALITE_URL within 30 s; its log:" >&2
        cat target/dynalite.log >&2
        exit 1
    fi
    local version
    version=$(node -p 'require("./.node/node_modules/dynalite/package.json").version' 2>/dev/null || echo "?")
    echo "$DYNALITE_LOG_PREFIX: dynalite $version (pid $DYNALITE_PID) at $TOLLGATE_TEST_DYNALITE_URL"
}
