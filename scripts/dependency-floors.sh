#!/usr/bin/env bash
# Run the fast tests on the lowest versions pyproject.toml allows: every direct dependency at
# its declared floor, under the oldest Python it declares, so a floor the code does not really
# run on fails here instead of on a user's machine.
#
#   bash scripts/dependency-floors.sh [PYTEST ARGS]    (scripts/test.sh runs it after the suite)
#   bash scripts/dependency-floors.sh --install-only   (the environment only: scripts/test.sh
#                                                       makes it beside its other installs)
#
# With no arguments it runs the tests that lean on the dependencies' behaviour: the pure layers,
# the HTTP and WebSocket serving (uvicorn, websockets), uploads and decoding (PyAV, multipart),
# the API's shapes (FastAPI, pydantic, the openai types) and the lints. The process-supervision,
# load and measurement tests are left out: they are about this code, and would double the time.
#
# The environment lives in the gitignored .cache/floor-venv and is rebuilt when the floors
# change. What pip picks for indirect dependencies is its newest match, as a user would get.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.cache/floor-venv
# it needs `packaging`, which the test venv has
floors=(.cache/test-venv/bin/python scripts/dependency_floors.py)
python=$("${floors[@]}" python)
if ! command -v "$python" >/dev/null; then
    echo "$python (the declared Python floor) is not installed: the floors cannot be tested" >&2
    exit 1
fi
constraints=$("${floors[@]}" constraints)
stamp="$venv/.floors-$(printf '%s' "$constraints" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
    rm -rf "$venv"
    "$python" -m venv "$venv"
    printf '%s\n' "$constraints" >"$venv/floors.txt"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -c "$venv/floors.txt" -e '.[test]'
    touch "$stamp"
fi
if [ "${1:-}" = --install-only ]; then
    exit 0
fi
"$venv/bin/python" scripts/dependency_floors.py check
if [ $# -eq 0 ]; then
    # over two processes, a test file each at a time (pytest-xdist), as the light lane runs
    set -- -n 2 --dist loadfile tests/unit tests/integration/realtime tests/integration/middleware \
        tests/integration/transcription tests/integration/wyoming tests/integration/jobs \
        tests/integration/test_hostile_input.py \
        tests/integration/test_api_surface.py tests/tools/test_packaging.py \
        tests/tools/test_dependency_floors.py \
        --ignore=tests/integration/jobs/test_restarts.py # servers killed: process supervision
fi
"$venv/bin/python" -m pytest -p no:cacheprovider -m "not engine and not container and not browser" \
    "$@"
