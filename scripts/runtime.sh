#!/usr/bin/env bash
# The ONNX Runtime of .venv, chosen by the machine: where an NVIDIA GPU is
# found (`nvidia-smi -L` lists one, or the driver's /proc/driver/nvidia/gpus
# holds one), the GPU runtime of scripts/gpu_runtime.txt (onnxruntime-gpu
# with the NVIDIA CUDA 13 wheels) and the CUDA plugin EP; elsewhere the CPU
# runtime. The plugin EPs of scripts/ep_plugins.txt everywhere. Says which.
# Called by scripts/setup.sh; idempotent.
#   scripts/runtime.sh [--dry-run]    --dry-run: say what it would install
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${WFSTUDIO_VENV:-$ROOT/.venv}"
NVIDIA_PROC="${WFSTUDIO_NVIDIA_PROC:-/proc/driver/nvidia/gpus}"
dry=0
[ "${1:-}" = --dry-run ] && dry=1

gpu=""
if command -v nvidia-smi >/dev/null 2>&1 && listed=$(nvidia-smi -L 2>/dev/null) && [ -n "$listed" ]; then
    gpu=$(head -n 1 <<<"$listed")
elif [ -d "$NVIDIA_PROC" ] && [ -n "$(ls -A "$NVIDIA_PROC" 2>/dev/null)" ]; then
    gpu="an NVIDIA GPU ($NVIDIA_PROC/$(ls "$NVIDIA_PROC" | head -n 1))"
fi

pip=("$VENV/bin/pip" install --quiet --disable-pip-version-check)
installed() { "$VENV/bin/pip" show --quiet "$1" >/dev/null 2>&1; }
# Whether every NAME==VERSION given is installed at exactly that version.
all_installed() {
    "$VENV/bin/python" -c 'import sys
from importlib.metadata import PackageNotFoundError, version
try:
    sys.exit(any(version(p.split("==")[0]) != p.split("==")[1] for p in sys.argv[1:]))
except PackageNotFoundError:
    sys.exit(1)' "$@" 2>/dev/null
}
# Installs a pinned requirements file unless its packages are all there at
# their pinned versions.
install_pinned() {
    local file=$1 packages
    packages=$(grep -Eo '^[A-Za-z0-9._-]+==[^ ]+' "$ROOT/scripts/$file")
    if ((dry)); then
        echo "would install from scripts/$file:" $packages
        return
    fi
    # shellcheck disable=SC2086
    all_installed $packages ||
        "${pip[@]}" --no-deps --require-hashes -r "$ROOT/scripts/$file"
}

if [ -n "$gpu" ]; then
    echo "runtime: found $gpu: the studio runs on the GPU (onnxruntime-gpu 1.31.1, CUDA 13, cuDNN; CUDA plugin EP)"
    if ((dry)); then
        echo "would remove: onnxruntime (the CPU runtime)"
    elif installed onnxruntime; then
        "$VENV/bin/pip" uninstall --quiet --yes onnxruntime
    fi
    install_pinned gpu_runtime.txt
    install_pinned ep_plugins_gpu.txt
else
    echo "runtime: no NVIDIA GPU found (no nvidia-smi listing one, nothing in $NVIDIA_PROC): the studio runs on CPU (onnxruntime 1.31.1)"
    if ((dry)); then
        echo "would install: onnxruntime==1.31.1"
    elif ! "$VENV/bin/python" -c "import onnxruntime; assert onnxruntime.__version__ == '1.31.1'" 2>/dev/null || installed onnxruntime-gpu; then
        installed onnxruntime-gpu && "$VENV/bin/pip" uninstall --quiet --yes onnxruntime-gpu
        "${pip[@]}" onnxruntime==1.31.1
    fi
fi
install_pinned ep_plugins.txt

# The CUDA plugin's wheel, kept for the prepared GPU check
# (scripts/gpu-check.sh prepare), which carries it to a GPU machine.
if ((dry)); then
    echo "would keep in .cache/gpu-check: $(grep -Eo '^[A-Za-z0-9._-]+==[^ ]+' "$ROOT/scripts/ep_plugins_gpu.txt")"
elif ! ls "$ROOT"/.cache/gpu-check/nxrt_ep_cuda-*.whl >/dev/null 2>&1; then
    "$VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps --require-hashes \
        -r "$ROOT/scripts/ep_plugins_gpu.txt" -d "$ROOT/.cache/gpu-check"
fi
