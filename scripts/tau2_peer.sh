#!/usr/bin/env bash
# tau2-bench beside our benches (issue 18): makes .tau2-venv (or $TAU2_VENV) with the first Python 3.12 or 3.13 it
# finds (tau2-bench's requires-python; $TAU2_BASE_PYTHON first when set, then python3.12, python3.13, python3 on PATH,
# then pyenv's versions, 3.12 before 3.13) and installs tau2-bench from a checkout you fetched (pip fetches its
# dependencies from PyPI, nothing else; on 3.13 also audioop-lts, as tau2 imports audioop, gone from 3.13's stdlib).
# It records the checkout's data directory in the venv (tau2_data_dir), where bench/peers/tau2_retail.py finds it.
#
#   bash scripts/tau2_peer.sh /path/to/tau2-bench      (make tau2-peer TAU2_REPO=/path/to/tau2-bench)
#   bash scripts/tau2_peer.sh --find-python            (print the interpreter it would use, and stop)
set -euo pipefail

find_python() {
    local pyenv_versions candidate path
    pyenv_versions=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[23].*/bin/python 2>/dev/null | sort -V || true)
    for candidate in ${TAU2_BASE_PYTHON:-} python3.12 python3.13 python3 $pyenv_versions; do
        path=$(command -v "$candidate" 2>/dev/null) || continue
        if "$path" -c 'import sys; sys.exit(0 if (3, 12) <= sys.version_info[:2] < (3, 14) else 1)' 2>/dev/null; then
            echo "$path"
            return 0
        fi
    done
    return 1
}

if [ "${1:-}" = "--find-python" ]; then
    find_python || { echo "no Python 3.12 or 3.13 found (PATH, pyenv)" >&2; exit 1; }
    exit 0
fi

repo=${1:-${TAU2_REPO:-}}
venv=${TAU2_VENV:-.tau2-venv}
if [ -z "$repo" ] || [ ! -f "$repo/pyproject.toml" ] || [ ! -d "$repo/src/tau2" ]; then
    echo "usage: make tau2-peer TAU2_REPO=/path/to/tau2-bench   (a checkout of sierra-research/tau2-bench)" >&2
    exit 2
fi
repo=$(cd "$repo" && pwd)
python=$(find_python) || { echo "tau2-bench needs Python 3.12 or 3.13: none found on PATH or in pyenv" >&2; exit 1; }

echo "tau2-bench from $repo into $venv with $python ($("$python" --version 2>&1))"
"$python" -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q "$repo"
if "$venv/bin/python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 13) else 1)'; then
    "$venv/bin/pip" install -q audioop-lts
fi
echo "$repo/data" > "$venv/tau2_data_dir"

if [ ! -f "$repo/data/tau2/domains/retail/db.json" ]; then
    echo "warning: $repo/data/tau2/domains/retail/db.json is missing: the benches' tau2 half will fail" >&2
fi
if [ ! -f "$repo/data/tau2/user_simulator/simulation_guidelines.md" ]; then
    echo "warning: $repo/data/tau2/user_simulator/ is missing: bench/rollouts.py's tau2 half needs it" >&2
fi
echo "done: $venv/bin/python (the benches look for .tau2-venv/bin/python; else pass --tau2-python or set TAU2_PYTHON)"
