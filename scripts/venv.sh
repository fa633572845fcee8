#!/usr/bin/env bash
# Create (or reuse) .venv with Python >= 3.12 and install the project with the given
# requirement spec: `.` for what `make run` needs, `.[dev]` for `make test`.
set -euo pipefail

cd "$(dirname "$0")/.."
VENV=.venv
PY=$VENV/bin/python
spec=$1

if [[ -x $PY ]] && $PY -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
    echo "Reusing $VENV ($($PY --version))"
else
    python=$(bash scripts/find-python.sh)
    echo "Creating $VENV with $python ($($python --version))"
    rm -rf "$VENV"
    "$python" -m venv "$VENV"
fi
# pip's own upgrade is skipped: the venv's bundled pip installs these wheels, and the
# upgrade was a tenth of a fresh clone's time to first page.
$PY -m pip install --quiet --disable-pip-version-check -e "$spec"
