#!/usr/bin/env bash
# Install the server with its [pyannote] extra (--diarizer PATH) into a virtual environment
# that runs without a GPU: tests/pyannote starts server.py from it.
#
#   bash scripts/install-pyannote.sh [VENV]      (VENV defaults to .venv-pyannote)
#
# PyPI's torchaudio is built against the CUDA build of torch: beside the CPU build it fails to
# import (it needs libc10_cuda.so), and pyannote.audio imports it. torch 2.9.1 with torchaudio
# 2.9 (CUDA builds, ~7 GB) imports and runs on the CPU. Running it again is a no-op.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${1:-.venv-pyannote}
stamp="$venv/.pyannote-ready"
if [ -f "$stamp" ]; then
    exit 0
fi
echo "Installing pyannote.audio into $venv (~7 GB, a few minutes the first time)" >&2
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet torch==2.9.1 'torchaudio==2.9.*' -e '.[pyannote]'
touch "$stamp"
