#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the test suite (issue 8).
#
#   pg-throwaway.sh bindir         print the PostgreSQL bin directory, or exit 1 if absent
#   pg-throwaway.sh start DIR      initdb into DIR, start it, create the role and database;
#                                  prints the DATABASE_URL (also written to DIR/url)
#   pg-throwaway.sh start --durable DIR
#                                  the same with fsync and full_page_writes on (the
#                                  server's defaults): for benchmarks, whose commit
#                                  rates mean nothing without them
#   pg-throwaway.sh stop DIR       stop the cluster and remove DIR
#   pg-throwaway.sh run CMD ARG..  start a cluster in a new temp dir, run CMD with
#                                  DATABASE_URL exported, then stop and remove it
#                                  (also on failure or Ctrl-C); exits with CMD's status
#
# The server listens on 127.0.0.1 at a free port, or PG_PORT (password auth, so the URL's user and
# password are exercised) and on a socket in DIR/sock. initdb refuses to run as root, so
# as root it runs as the `postgres` user. The default collation is ICU "en-US", not C:
# the suite then proves that storage orders IDs and keys in binary order on its own
# (db_collation "C" on those columns), as it must on a production database.
# fsync is off unless --durable: a test cluster is thrown away, a crash loses nothing we
# keep, and the suite commits thousands of times. The connections still ask for
# synchronous_commit=on, as in production; with fsync off that waits for a write() only.
set -euo pipefail

ROLE=conduit
PASSWORD=conduit
DBNAME=conduit

die() {
    echo "pg-throwaway: $*" >&2
    exit 1
}

# (Every `return` below names its status: inside an EXIT trap, a bare `return` returns
# the status the script was exiting with.)
bindir() {
    local dir
    if [[ -n "${PG_BINDIR:-}" ]]; then
        [[ -x "$PG_BINDIR/initdb" ]] || die "PG_BINDIR=$PG_BINDIR has no initdb"
        echo "$PG_BINDIR"
        return 0
    fi
    # Debian installs each major version under /usr/lib/postgresql/N/bin; take the newest.
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then
            echo "$dir"
            return 0
        fi
    done
    if command -v pg_config >/dev/null; then
        dir=$(pg_config --bindir)
        if [[ -x "$dir/initdb" ]]; then
            echo "$dir"
            return 0
        fi
    fi
    dir=$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/initdb)")
    [[ -x "$dir/initdb" ]] || return 1
    echo "$dir"
}

# Run a server binary as the cluster's owner.
as_owner() {
    if [[ $(id -u) -eq 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# PG_PORT if set (a caller that keeps to its own ports); else a port the kernel just
# handed out is free; without python3, a random high one (the start is retried if it
# was taken).
free_port() {
    if [[ -n "${PG_PORT:-}" ]]; then
        echo "$PG_PORT"
        return 0
    fi
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' \
        2>/dev/null || echo $((20000 + RANDOM % 40000))
}

start() {
    local durability=(-c fsync=off -c full_page_writes=off)
    if [[ ${1:-} == --durable ]]; then
        durability=(-c fsync=on -c full_page_writes=on)
        shift
    fi
    local dir=$1 bin port
    bin=$(bindir) || die "no PostgreSQL binaries found (apt-get install postgresql)"
    mkdir -p "$dir/sock"
    dir=$(cd "$dir" && pwd)
    if [[ $(id -u) -eq 0 ]]; then
        id postgres >/dev/null 2>&1 || die "running as root needs the postgres user"
        chown -R postgres: "$dir"
    fi
    chmod 700 "$dir"

    local locale=(--locale=C.UTF-8)
    # Not grep -q: it exits at the first match, initdb's --help then dies of SIGPIPE,
    # and pipefail turns that into "no ICU" at random.
    if "$bin/initdb" --help | grep -- --locale-provider >/dev/null; then
        locale+=(--locale-provider=icu --icu-locale=en-US)
    fi
    printf '%s' "$PASSWORD" >"$dir/pwfile"
    [[ $(id -u) -ne 0 ]] || chown postgres: "$dir/pwfile"
    as_owner "$bin/initdb" -D "$dir/data" -U postgres -E UTF8 "${locale[@]}" \
        --auth-local=trust --auth-host=scram-sha-256 --pwfile="$dir/pwfile" \
        >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        die "initdb failed"
    }
    rm -f "$dir/pwfile"

    # Another process may take the port between free_port and the bind: retry.
    local try
    for try in 1 2 3 4 5; do
        port=$(free_port)
        if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
            -o "-c listen_addresses=127.0.0.1 -c port=$port" \
            -o "-c unix_socket_directories=$dir/sock -c max_connections=200" \
            -o "${durability[*]}" >/dev/null; then
            break
        fi
        [[ $try -lt 5 ]] || {
            cat "$dir/server.log" >&2
            die "the server did not start"
        }
    done
    echo "$port" >"$dir/port"

    # CREATEDB: pytest-django creates (and drops) its test_* databases.
    # pg_signal_backend: tests drop their scratch databases WITH (FORCE), which ends
    # every session on them, an autovacuum worker's too; a role that is not a superuser
    # may end one only as a member (CI: a drop failed "must be a member of ...
    # pg_signal_backend" while autovacuum analysed the rows a restore had just written).
    as_owner "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir/sock" -p "$port" -U postgres \
        -d postgres \
        -c "CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD'" \
        -c "GRANT pg_signal_backend TO $ROLE" \
        -c "CREATE DATABASE $DBNAME OWNER $ROLE" >/dev/null
    echo "postgres://$ROLE:$PASSWORD@127.0.0.1:$port/$DBNAME" | tee "$dir/url"
}

stop() {
    local dir=$1 bin
    [[ -d "$dir" ]] || return 0
    if [[ -f "$dir/data/postmaster.pid" ]]; then
        bin=$(bindir) || die "no PostgreSQL binaries found"
        as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null ||
            as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null || true
    fi
    rm -rf "$dir"
}

run() {
    [[ $# -gt 0 ]] || die "run needs a command"
    local dir url status=0
    dir=$(mktemp -d "${TMPDIR:-/tmp}/conduit-pg.XXXXXX")
    # shellcheck disable=SC2064  # expand $dir now
    trap "stop '$dir'" EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    url=$(start "$dir")
    echo "pg-throwaway: $("$(bindir)/postgres" --version) at $url (socket dir $dir/sock)" >&2
    DATABASE_URL=$url "$@" || status=$?
    return "$status"
}

case "${1:-}" in
bindir) bindir ;;
start)
    shift
    [[ $# -eq 1 || ($# -eq 2 && $1 == --durable) ]] || die "usage: $0 start [--durable] DIR"
    start "$@"
    ;;
stop)
    [[ $# -eq 2 ]] || die "usage: $0 stop DIR"
    stop "$2"
    ;;
run)
    shift
    run "$@"
    ;;
*) die "usage: $0 {bindir | start [--durable] DIR | stop DIR | run CMD [ARG...]}" ;;
esac
