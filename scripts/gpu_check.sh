#!/usr/bin/env bash
# GPU check of morphaug's native kernels, run from the repository root on a
# CUDA machine (torch with CUDA, nvcc, ninja, scipy, pytest, hypothesis;
# cupy optional): build with the CUDA kernels, show the backends, run the
# CUDA tests (tests/test_cuda_emulation.py's cases on the GPU among them: the
# cases every CUDA kernel passes in emulation on CPU machines), then time batched EDT / CDT / grey erosion / label on the GPU against a
# SciPy loop and cupyx.scipy.ndimage, the transforms and OT suites of
# benchmarks/run.py on the GPU (Sinkhorn with 4096 pairs included), and its
# metrics row (HD95 + ASSD + NSD on 8x3x96^3 one-hot masks on the GPU: the
# fused morphaug.metrics.surface_distance_metrics against morphaug's three
# separate functions where MONAI is not installed, as on the GPU machine;
# against MONAI's metric classes on the same CUDA tensors where it is).
# About 8 minutes; each step has a timeout.
#
#   bash scripts/gpu_check.sh            # PYTHON=python3.12 to pick the interpreter
set -euo pipefail

PYTHON=${PYTHON:-python}
cd "$(dirname "$0")/.."

echo "== build (MORPHAUG_CUDA=1, sm_90)"
timeout 300 env MORPHAUG_CUDA=1 MORPHAUG_REQUIRE_NATIVE=1 \
    TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}" MAX_JOBS="${MAX_JOBS:-$(nproc)}" \
    "$PYTHON" -m pip install --no-build-isolation --no-deps -e . -q

echo "== backends"
timeout 60 "$PYTHON" - <<'EOF'
import torch
from morphaug._ops import backend_info
info = backend_info()
assert torch.cuda.is_available(), "no CUDA device visible"
assert "cuda" in info["native_devices"], "morphaug._C has no CUDA kernels"
EOF

echo "== CUDA tests"
timeout 240 "$PYTHON" -m pytest -m cuda -q -p no:cacheprovider tests

echo "== GPU benchmarks"
timeout 180 "$PYTHON" - <<'EOF'
import time

import numpy as np
import scipy.ndimage as ndi
import torch

from morphaug._ops import kernels as _native

try:
    import cupy
    import cupyx.scipy.ndimage as cndi
except ImportError:
    cupy = cndi = None

device = torch.device("cuda")
print(torch.cuda.get_device_name(), "torch", torch.__version__)


def gpu_time(fn, repeat=5):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def cpu_time(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def cupy_time(fn, repeat=5):
    fn()
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def blobs(shape, seed=0):
    """Smooth random blobs, about half foreground."""
    rng = np.random.default_rng(seed)
    field = ndi.gaussian_filter(rng.standard_normal(shape), (0,) + (4,) * (len(shape) - 1))
    return field > 0, field.astype(np.float32)


def erosion(v, size):
    rank = v.ndim - 2
    return _native.grey_box(v, [size] * rank, [0] * rank, ["reflect"] * rank, 0.0, False)


for shape in [(16, 128, 128, 128), (64, 512, 512)]:
    mask, values = blobs(shape)
    label = "x".join(map(str, (shape[0], 1) + shape[1:]))
    m = torch.from_numpy(mask)[:, None].to(device)
    v = torch.from_numpy(values)[:, None].to(device)
    full = np.ones((3,) * (m.ndim - 2), bool)  # 26- / 8-connectivity
    # name, ours, SciPy on one slice, cupyx on one slice (or None), input
    cases = [
        ("edt", lambda: _native.edt(m)[0], ndi.distance_transform_edt,
         cndi and cndi.distance_transform_edt, mask),
        ("cdt chessboard", lambda: _native.cdt(m, np.ones((3,) * (m.ndim - 2), bool))[0],
         lambda s: ndi.distance_transform_cdt(s, metric="chessboard"), None, mask),
        ("grey_erosion size 3", lambda: erosion(v, 3), lambda s: ndi.grey_erosion(s, size=3),
         cndi and (lambda c: cndi.grey_erosion(c, size=3)), values),
        ("grey_erosion size 7", lambda: erosion(v, 7), lambda s: ndi.grey_erosion(s, size=7),
         cndi and (lambda c: cndi.grey_erosion(c, size=7)), values),
        ("label full", lambda: _native.label(m, full)[0], lambda s: ndi.label(s, full)[0],
         cndi and (lambda c: cndi.label(c, full)[0]), mask),
    ]
    for name, ours, scipy_fn, cupy_fn, source in cases:
        ours_s = gpu_time(ours)
        scipy_s = cpu_time(lambda: [scipy_fn(s) for s in source])
        expected = np.stack([scipy_fn(s) for s in source[:2]])
        diff = np.abs(ours()[:2, 0].double().cpu().numpy() - expected).max()
        cupy_s = float("nan")
        if cupy_fn is not None:
            batch = cupy.asarray(source)
            cupy_s = cupy_time(lambda: [cupy_fn(batch[i]) for i in range(len(source))])
        print(f"{name:20s} {label:14s} ours {ours_s * 1e3:8.2f} ms | "
              f"SciPy loop {scipy_s * 1e3:9.1f} ms ({scipy_s / ours_s:6.1f}x) | "
              f"cupyx loop {cupy_s * 1e3:8.2f} ms ({cupy_s / ours_s:6.2f}x) | "
              f"max |diff| vs SciPy {diff:.2e}", flush=True)
EOF
echo "== GPU transforms and OT (benchmarks/run.py; SciPy / NumPy references on the CPU)"
timeout 240 "$PYTHON" benchmarks/run.py --suite transforms,ot --device cuda --no-write

echo "== GPU metrics (benchmarks/run.py: fused HD95 + ASSD + NSD; MONAI's classes, or without MONAI the three functions)"
timeout 300 "$PYTHON" benchmarks/run.py --suite metrics --device cuda --no-write

echo "== done"
