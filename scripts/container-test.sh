#!/usr/bin/env bash
# Build the images the container tests run (tests/containers), with podman, as a user would.
#
#   bash scripts/container-test.sh [--gpu]
#
# What differs from a user's `docker build --target cpu .`, because these machines reach no
# container registry and PyPI lacks torch's CPU build:
# - the base image is Debian bookworm with Python, made here by mmdebstrap and imported as
#   localhost/debian-py:bookworm (the CPU_IMAGE build argument);
# - torch==2.13.0+cpu comes from the wheel folder pip's find-links names on this machine
#   (PIP_FIND_LINKS, or `pip config get global.find-links`), mounted into the build and given
#   as TORCH_FIND_LINKS; TORCH_INDEX_URL, if set, is passed as a user would;
# - the machine's certificate folder and pip.conf are mounted read-only into the build, so
#   that pip there trusts what pip here trusts.
# It also builds the compose test's stand-in for qwen3-tts-server (tests/containers/
# tts-standin). With --gpu it builds the GPU target on the same Debian base instead of the
# CUDA one: every step runs but the CUDA base (PyPI's vLLM and its CUDA wheels: ~10 GB).
#
# Podman here: crun refuses this machine's cgroups and podman's default rlimits are refused,
# so CONTAINERS_CONF names a file that asks for runc and no rlimits; containers run with
# `--network host` (no container network is made). Images are tagged
# localhost/qwen3-asr-server:cpu (and :gpu-on-debian), localhost/tts-standin:test.
set -euo pipefail
cd "$(dirname "$0")/.."

work=.cache/container
mkdir -p "$work"
export CONTAINERS_CONF="$PWD/$work/containers.conf"
printf '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n' > "$CONTAINERS_CONF"

base=localhost/debian-py:bookworm
if ! podman image exists "$base"; then
    mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,ca-certificates \
        bookworm "$work/rootfs.tar"
    podman import --quiet "$work/rootfs.tar" "$base" >/dev/null
    rm "$work/rootfs.tar"
fi

mounts=(-v /etc/ssl/certs:/etc/ssl/certs:ro)
if [ -f /etc/pip.conf ]; then
    mounts+=(-v /etc/pip.conf:/etc/pip.conf:ro)
fi
build=(podman build --isolation chroot --format docker --network host "${mounts[@]}")

if [ "${1:-}" = "--gpu" ]; then
    "${build[@]}" --target gpu --build-arg CUDA_IMAGE="$base" \
        -t localhost/qwen3-asr-server:gpu-on-debian -f Containerfile .
    exit 0
fi

torch=()
if [ -n "${TORCH_INDEX_URL:-}" ]; then
    torch+=(--build-arg TORCH_INDEX_URL="$TORCH_INDEX_URL")
fi
wheels=${PIP_FIND_LINKS:-$(python3 -m pip config get global.find-links 2>/dev/null || true)}
if [ -n "$wheels" ] && [ -d "$wheels" ]; then
    torch+=(-v "$wheels:/wheels:ro" --build-arg TORCH_FIND_LINKS=/wheels)
fi
"${build[@]}" "${torch[@]}" --target cpu --build-arg CPU_IMAGE="$base" \
    -t localhost/qwen3-asr-server:cpu -f Containerfile .
"${build[@]}" --build-arg BASE_IMAGE="$base" -t localhost/tts-standin:test \
    tests/containers/tts-standin
podman image prune --force >/dev/null  # earlier builds' images, not the layers these use
