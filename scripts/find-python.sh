#!/usr/bin/env bash
# Print the path of the first Python >= 3.12 among the candidates, or fail saying why.
# $PYTHON, when set, is the only candidate. Otherwise, in order: python3.13, python3.12,
# pyenv's python (honours .python-version), any pyenv-installed 3.12+, python3.
set -uo pipefail

is_new_enough() {
    "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1
}

# An explicit choice is obeyed or refused, never silently replaced.
if [[ -n "${PYTHON:-}" ]]; then
    if path=$(command -v "$PYTHON" 2>/dev/null) && is_new_enough "$path"; then
        echo "$path"
        exit 0
    fi
    echo "error: PYTHON=$PYTHON is not a Python >= 3.12" >&2
    exit 1
fi

candidates=(python3.13 python3.12)
if command -v pyenv >/dev/null 2>&1; then
    candidates+=("$(pyenv which python 2>/dev/null || true)")
fi
candidates+=("$HOME/.pyenv/shims/python")
for p in "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3; do
    [[ -x "$p" ]] && candidates+=("$p")
done
candidates+=(python3)

tried=()
for candidate in "${candidates[@]}"; do
    [[ -z "$candidate" ]] && continue
    path=$(command -v "$candidate" 2>/dev/null) || continue
    if is_new_enough "$path"; then
        echo "$path"
        exit 0
    fi
    tried+=("$candidate ($("$path" --version 2>&1 | head -n1))")
done

{
    echo "error: Conduit Console needs Python >= 3.12, none found."
    echo "tried: ${tried[*]:-nothing}"
    echo "Set PYTHON=/path/to/python3.12 (e.g. make PYTHON=... venv) or install one"
    echo "(pyenv install 3.12, or apt-get install python3 on Debian 13+)."
} >&2
exit 1
