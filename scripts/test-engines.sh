#!/usr/bin/env bash
# make test's two suites, side by side (issue 29): pytest on SQLite, and pytest on a
# throwaway PostgreSQL cluster (scripts/pg-throwaway.sh), as two parallel jobs. Each
# job has its own databases (a test database per pytest process, named after its pid:
# conduit.settings) and its own log; when both are done, both logs are printed whole,
# one after the other under a header, then a verdict per engine: the count of tests it
# ran, or why it failed (pytest's FAILED/ERROR lines, prefixed with the engine).
# Exits non-zero if either failed. pytest's exit 5 (no test ran) is a failure.
#
#   test-engines.sh [--sqlite EXPR] [--postgresql EXPR] [-- ARGS...]
#       EXPR: each engine's marker expression (-m; the Makefile's say which tests run
#       where); ARGS go to both pytest runs (paths, -k, --durations=N)
#
# Environment: TEST_WORKERS (pytest-xdist's -n per engine; the Makefile sets it;
# SQLITE_WORKERS, PG_WORKERS for one engine),
# CI=true makes a missing PostgreSQL a failure (as the Makefile did before).
set -uo pipefail

cd "$(dirname "$0")/.."
VENV=.venv
sqlite_marks="not postgres_only"
# Engine-neutral tests (no database engine: tests/support/engine_neutral.py) ran on SQLite.
pg_marks="not sqlite_only and not engine_neutral"
while [[ $# -gt 0 ]]; do
    case $1 in
        --sqlite) sqlite_marks=$2; shift 2 ;;
        --postgresql) pg_marks=$2; shift 2 ;;
        --) shift; break ;;
        *) echo "test-engines.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
# Each log ends with its ten slowest test phases (setup, call or teardown), so a
# test that grows CI's time is named in every run.
args=(--durations=10 "$@")
# pytest-xdist's -n for each engine's job: TEST_WORKERS, or SQLITE_WORKERS and
# PG_WORKERS for one engine (the Makefile says which pays).
xdist_of() {
    if [[ "${1:-0}" != 0 ]]; then
        echo "-n $1 --dist loadgroup"
    fi
}
read -r -a xdist <<<"$(xdist_of "${SQLITE_WORKERS:-${TEST_WORKERS:-0}}")"
read -r -a pg_xdist <<<"$(xdist_of "${PG_WORKERS:-${TEST_WORKERS:-0}}")"

logs=$(mktemp -d "${TMPDIR:-/tmp}/conduit-tests.XXXXXX")

echo "== SQLite:     pytest ${xdist[*]} -m '$sqlite_marks'   (log: $logs/sqlite.log)"
$VENV/bin/pytest "${xdist[@]}" -m "$sqlite_marks" "${args[@]}" >"$logs/sqlite.log" 2>&1 &
sqlite_pid=$!

pg=""
if bin=$(bash scripts/pg-throwaway.sh bindir); then
    pg=yes
    echo "== PostgreSQL: pytest ${pg_xdist[*]} -m '$pg_marks'   (log: $logs/postgresql.log)"
    echo "   on a throwaway cluster ($bin); sqlite_only tests prove SQLite's own WAL,"
    echo "   PRAGMA and file mechanisms"
    bash scripts/pg-throwaway.sh run bash -c \
        '$0/bin/python manage.py migrate --noinput -v 0 &&
         $0/bin/python manage.py makemigrations --check --dry-run &&
         $0/bin/pytest -m "$1" "${@:2}"' "$VENV" "$pg_marks" "${pg_xdist[@]}" "${args[@]}" \
        >"$logs/postgresql.log" 2>&1 &
    pg_pid=$!
elif [[ "${CI:-}" == "true" ]]; then
    echo "error: no PostgreSQL server binaries and CI=true: the PostgreSQL suite must run." >&2
    echo "Install them with: apt-get install -y postgresql (.ci/run does)" >&2
    kill "$sqlite_pid" 2>/dev/null
    exit 1
else
    echo "WARNING: no PostgreSQL server binaries (initdb, pg_ctl): the PostgreSQL suite"
    echo "WARNING: did NOT run. Install them with: sudo apt-get install -y postgresql"
fi

wait "$sqlite_pid"
sqlite_status=$?
pg_status=0
if [[ -n "$pg" ]]; then
    wait "$pg_pid"
    pg_status=$?
fi

# The verdict of one engine: its log's summary line, or why it failed.
verdict() {
    local name=$1 log=$2 status=$3 summary
    summary=$(grep -E '^(=+ )?[0-9]+ (passed|failed|error|skipped|deselected|xfailed|xpassed)|no tests ran' "$log" | tail -1 | sed -E 's/^=+ //; s/ =+$//')
    local ran
    ran=$(grep -E '^engine [a-z]+: [0-9]+ tests ran' "$log" | tail -1)
    case $status in
        0) echo "$name: passed: ${summary:-?}${ran:+ ($ran)}" ;;
        5) echo "$name: FAILED: pytest ran no test (exit 5): ${summary:-no summary}" ;;
        *)
            echo "$name: FAILED (exit $status): ${summary:-no pytest summary; see the log above}"
            grep -E '^(FAILED|ERROR) ' "$log" | sed "s/^/  [$name] /"
            ;;
    esac
}

for engine in sqlite postgresql; do
    [[ -f "$logs/$engine.log" ]] || continue
    echo
    echo "==================== $engine: the whole log ($logs/$engine.log) ===================="
    cat "$logs/$engine.log"
done
echo
echo "==================== verdict ===================="
verdict SQLite "$logs/sqlite.log" "$sqlite_status"
if [[ -n "$pg" ]]; then
    verdict PostgreSQL "$logs/postgresql.log" "$pg_status"
fi
if [[ $sqlite_status -ne 0 || $pg_status -ne 0 ]]; then
    exit 1
fi
rm -rf "$logs"
