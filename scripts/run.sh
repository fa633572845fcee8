#!/usr/bin/env bash
# `make run`: prepare the development database and serve the console with gunicorn.
# Starts `manage.py simulate` beside it when that command exists. Ctrl-C stops both.
#
# The simulator writes about two lines a second and gunicorn one per poll; on the
# terminal they scroll the sign-in details away within seconds. So both go to
# DATA_DIR/logs/ and the URL and the login are the last lines printed. `-v` (or
# `make run V=1`) keeps everything on the terminal instead.
set -euo pipefail

cd "$(dirname "$0")/.."
PY=.venv/bin/python
BIND=${CONDUIT_BIND:-127.0.0.1:8000}
DATA_DIR=${CONDUIT_DATA_DIR:-data}
LOG_DIR=$DATA_DIR/logs
verbose=0
if [[ ${1:-} == -v ]]; then verbose=1; fi

"$PY" manage.py migrate --noinput
# Startup backfills (event scopes, attempt executors): idempotent, cheap when done.
"$PY" manage.py backfill
login=$("$PY" manage.py ensure_dev_operator --no-color)
"$PY" manage.py collectstatic --noinput --verbosity 0

# The logs hold request paths and Work IDs: private like the rest of DATA_DIR.
(umask 077 && mkdir -p "$LOG_DIR")
if ((verbose)); then
    sim_log=/dev/stdout
    access_log=-
    console_log=/dev/stderr
else
    sim_log=$LOG_DIR/simulate.log
    access_log=$LOG_DIR/access.log
    console_log=$LOG_DIR/console.log
    (umask 077 && touch "$sim_log" "$access_log" "$console_log")
fi

pids=()
cleanup() {
    trap - EXIT INT TERM
    for pid in "${pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    # Reap them so the SQLite WAL is checkpointed before we return to the shell.
    wait "${pids[@]}" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

simulating=0
if "$PY" manage.py help simulate >/dev/null 2>&1; then
    "$PY" manage.py simulate >>"$sim_log" 2>&1 &
    pids+=($!)
    simulating=1
fi

# gthread workers: SQLite serialises writes anyway, threads keep idle memory low. With
# DATABASE_URL (PostgreSQL) each worker's threads share its connection pool.
# Extra gunicorn flags can be passed through GUNICORN_CMD_ARGS.
# deploy/gunicorn.conf.py: the hosts' settings (and /metrics' multiprocess folder).
.venv/bin/gunicorn conduit.wsgi \
    -c deploy/gunicorn.conf.py \
    --bind "$BIND" \
    --workers 2 \
    --threads 4 \
    --no-control-socket \
    --access-logfile "$access_log" \
    --error-logfile - 2>>"$console_log" &
pids+=($!)

up=0
for _ in $(seq 1 50); do
    if "$PY" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)" \
        "http://$BIND/healthz" 2>/dev/null; then
        up=1
        break
    fi
    sleep 0.2
done

if ((up)); then
    rule=$(printf '%.0s=' $(seq 1 64))
    echo
    echo "$rule"
    if ((simulating)); then
        echo "Simulated runtime: on (manage.py simulate)"
    else
        echo "No simulate command: serving without simulated traffic"
    fi
    if ((verbose)); then
        echo "Logs: on this terminal (-v)"
    else
        echo "Logs: $LOG_DIR/{console,access,simulate}.log   (make run V=1 shows them here)"
    fi
    echo "$login"
    echo
    echo "Conduit Console is up at http://$BIND/   (Ctrl-C stops it)"
    echo "$rule"
else
    echo "Conduit Console did not answer http://$BIND/healthz within 10 s; see $console_log" >&2
fi

# Return as soon as either child exits; the EXIT trap stops the other. Its output is
# in a log file, so say why here rather than return to the prompt without a word.
status=0
wait -n "${pids[@]}" || status=$?
if ((!verbose && status != 0 && status < 128)); then
    echo "A process of make run stopped (exit $status); the end of its logs:" >&2
    tail -n 5 "$console_log" "$sim_log" >&2
fi
exit "$status"
