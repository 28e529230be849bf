#!/usr/bin/env bash
# Install what the tests need into .venv and run them: the README's test command and CI's.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'

.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
# pytest exits 5 when it collected no test: that is a failure too, and set -e sees it
.venv/bin/python -m pytest "$@"
