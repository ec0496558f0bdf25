#!/usr/bin/env bash
# The GPU questions in one call, within 10 minutes of wall time on a GPU machine (build included):
# build morphaug._C with its CUDA kernels for the visible GPU, then scripts/gpu_check.py runs the
# stages in order of importance (versions and build time; pytest -m cuda; compute-sanitizer;
# sync debug mode; kernel timings and GB/s; cupyx and SciPy side by side; adversarial inputs;
# float64 EDT indices; a batch past 2^31 voxels) and writes gpu_check.json and gpu_check.md into
# $OUT (default ./gpu_check_report). Exits non-zero on any mismatch.
#
#   bash scripts/gpu_check.sh               # PYTHON=python3.12 to pick the interpreter
#   bash scripts/gpu_check.sh --dry-run     # on the CPU through the emulator (tests/test_gpu_check.py)
set -euo pipefail

PYTHON=${PYTHON:-python}
cd "$(dirname "$0")/.."
export OUT=${OUT:-$PWD/gpu_check_report}
mkdir -p "$OUT"

if [[ "${1:-}" != "--dry-run" ]]; then
    arch=$("$PYTHON" -c "import torch; print('%d.%d' % torch.cuda.get_device_capability())")
    start=$(date +%s)
    echo "== build (MORPHAUG_CUDA=1, sm ${arch}, MAX_JOBS=${MAX_JOBS:-16})"
    timeout 300 env MORPHAUG_CUDA=1 MORPHAUG_REQUIRE_NATIVE=1 TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-$arch}" \
        MAX_JOBS="${MAX_JOBS:-16}" "$PYTHON" -m pip install --no-build-isolation --no-deps -e . -q \
        > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
    export MORPHAUG_BUILD_SECONDS=$(( $(date +%s) - start ))
fi
# the stages take the rest of the 10 minutes; each one has its own limits
exec timeout 290 "$PYTHON" scripts/gpu_check.py --out "$OUT" "$@"
