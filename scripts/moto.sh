# Shared by scripts/test and scripts/demo (sourced, not run): install moto's server if
# missing (into .venv, git-ignored, when the system pip refuses), start it on a free
# loopback port, export TOLLGATE_TEST_MOTO_URL, and stop it on exit.
# Callers set MOTO_LOG_PREFIX for messages.

MOTO_PID=
# The moto release the discovery tests were written and checked against. Pinned so that a
# fresh machine installs what was tested, not whatever was published last; a moto already
# installed is used as it is (its version is printed).
MOTO_SPEC="moto[server]==5.2.1"
stop_moto() {
    if [ -n "$MOTO_PID" ]; then
        kill "$MOTO_PID" 2>/dev/null || true
        wait "$MOTO_PID" 2>/dev/null || true
    fi
    # scripts/test builds while moto starts: an exit meanwhile stops that build too.
    if declare -F stop_build >/dev/null; then
        stop_build
    fi
}

find_moto() {
    if [ -x .venv/bin/moto_server ]; then
        echo .venv/bin/moto_server
    elif command -v moto_server >/dev/null 2>&1 && python3 -c 'import moto.server' 2>/dev/null; then
        command -v moto_server
    fi
}

# The Python that has moto (and so boto3) importable.
moto_python() {
    if [ -x .venv/bin/python ] && .venv/bin/python -c 'import moto' 2>/dev/null; then
        echo .venv/bin/python
    else
        echo python3
    fi
}

# Install moto's server unless TOLLGATE_TEST_MOTO_URL names one or it is installed; sets
# MOTO. Safe to run in a background subshell (scripts/test does, while cargo builds).
install_moto() {
    if [ -n "${TOLLGATE_TEST_MOTO_URL:-}" ]; then
        return 0
    fi
    if ! command -v python3 >/dev/null 2>&1; then
        echo "$MOTO_LOG_PREFIX: python3 not found; moto's server (pip install \"moto[server]\") is needed for the discovery tests" >&2
        exit 1
    fi
    MOTO=$(find_moto)
    if [ -z "$MOTO" ]; then
        echo "$MOTO_LOG_PREFIX: installing $MOTO_SPEC (AWS emulator for the discovery tests)"
        if ! python3 -m pip install --quiet --disable-pip-version-check "$MOTO_SPEC" 2>/dev/null \
            || [ -z "$(find_moto)" ]; then
            python3 -m venv .venv
            .venv/bin/python -m pip install --quiet --disable-pip-version-check "$MOTO_SPEC"
        fi
        MOTO=$(find_moto)
    fi
    if [ -z "$MOTO" ]; then
        echo "$MOTO_LOG_PREFIX: moto_server is still missing after installing moto[server]" >&2
        exit 1
    fi
}

start_moto() {
    trap stop_moto EXIT
    if [ -z "${TOLLGATE_TEST_MOTO_URL:-}" ]; then
        install_moto
        MOTO_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        mkdir -p target
        "$MOTO" -H 127.0.0.1 -p "$MOTO_PORT" >target/moto_server.log 2>&1 &
        MOTO_PID=$!
        export TOLLGATE_TEST_MOTO_URL="http://127.0.0.1:$MOTO_PORT"
        local ready=
        for _ in $(seq 1 150); do
            if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/moto-api/", timeout=1)' \
                "$TOLLGATE_TEST_MOTO_URL" 2>/dev/null; then
                ready=1
                break
            fi
            if ! kill -0 "$MOTO_PID" 2>/dev/null; then
                echo "$MOTO_LOG_PREFIX: moto_server exited; its log:" >&2
                cat target/moto_server.log >&2
                exit 1
            fi
            sleep 0.2
        done
        if [ -z "$ready" ]; then
            echo "$MOTO_LOG_PREFIX: moto_server (pid $MOTO_PID) did not answer at $TOLLGATE_TEST_MOTO_URL within 30 s; its log:" >&2
            cat target/moto_server.log >&2
            exit 1
        fi
        echo "$MOTO_LOG_PREFIX: moto_server $("$(moto_python)" -c 'import moto; print(moto.__version__)' 2>/dev/null) (pid $MOTO_PID) at $TOLLGATE_TEST_MOTO_URL"
    fi
}
