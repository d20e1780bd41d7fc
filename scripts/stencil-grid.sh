#!/usr/bin/env bash
# The stencil on a 3 x 3 process grid, natively and on an emulated slow
# network (scripts/stencil_grid.py says what it measures), from a checkout on
# a bare machine with at least nine cores:
#
#   bash scripts/stencil-grid.sh [--procs 9] [--trials 20] [--budget SECONDS] [--runtime-grid] [--cores fastest|all|LIST]
#   bash scripts/stencil-grid.sh --speeds     # only time the ranks against each other
#
# (scripts/stencil_grid.py says which budgets a slow nine-rank profile needs.)
#
# It sets up .venv with `make setup` first, unless HLC_PYTHON names a Python
# that already has hlc installed.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${HLC_PYTHON:-}" ]; then
    make setup
    HLC_PYTHON=.venv/bin/python
fi
exec "$HLC_PYTHON" scripts/stencil_grid.py "$@"
