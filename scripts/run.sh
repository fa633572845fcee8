#!/usr/bin/env bash
# `make run`: prepare the development database and serve the console with gunicorn.
# Starts `manage.py simulate` beside it when that command exists. Ctrl-C stops both.
set -euo pipefail

cd "$(dirname "$0")/.."
PY=.venv/bin/python
BIND=${CONDUIT_BIND:-127.0.0.1:8000}

"$PY" manage.py migrate --noinput
# Startup backfills (event scopes, attempt executors): idempotent, cheap when done.
"$PY" manage.py backfill
"$PY" manage.py ensure_dev_operator
"$PY" manage.py collectstatic --noinput --verbosity 0

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

if "$PY" manage.py help simulate >/dev/null 2>&1; then
    echo "Starting the simulator (manage.py simulate)"
    "$PY" manage.py simulate &
    pids+=($!)
else
    echo "No simulate command yet: serving without simulated traffic"
fi

# gthread workers: SQLite serialises writes anyway, threads keep idle memory low. With
# DATABASE_URL (PostgreSQL) each worker's threads share its connection pool.
# Extra gunicorn flags can be passed through GUNICORN_CMD_ARGS.
.venv/bin/gunicorn conduit.wsgi \
    --bind "$BIND" \
    --workers 2 \
    --threads 4 \
    --no-control-socket \
    --access-logfile - &
pids+=($!)

for _ in $(seq 1 50); do
    if "$PY" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)" \
        "http://$BIND/healthz" 2>/dev/null; then
        echo "Conduit Console is up at http://$BIND/  (Ctrl-C stops it)"
        break
    fi
    sleep 0.2
done

# Return as soon as either child exits; the EXIT trap stops the other.
wait -n "${pids[@]}"
