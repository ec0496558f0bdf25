"""No fused multiply-add where a CUDA kernel promises SciPy's bits.

nvcc contracts ``a * b + c`` into ``fma.rn.f64`` (one rounding instead of two)
unless told not to; SciPy's host build rounds each operation. The float
arithmetic documented as exact (the EDT's parabola envelope, its pass 0 with
sampling, its no-background lines, the grey ops' non-flat structures, the
brute-force transform's sampled squares) is
compiled here by nvcc to PTX, one small translation unit over the core
headers, and the PTX must hold no ``fma``. The emulator (host g++, no
contraction) cannot see this; only nvcc's output can.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

# Under `pytest -n 2 --dist loadgroup` the module runs on one worker: the PTX is compiled once.
pytestmark = pytest.mark.xdist_group("test_ptx")

CSRC = Path(__file__).resolve().parents[1] / "csrc"

# Each exact function, instantiated for the working types the launchers use.
SOURCE = r"""
#include "core/distance_bf.h"
#include "core/edt.h"
#include "core/grey.h"
using namespace morphaug;

template <typename T>
__global__ void envelope(const T* f, int64_t n, double s, T* out, int32_t* arg, int32_t* pos, double* hull) {
  edt_envelope_line<T>(f, 1, n, s, out, 1, arg, pos, hull, 1, threadIdx.x != 0);
}
template <typename T>
__global__ void binary_lines(const bool* mask, int64_t n, double s, T* out, int32_t* arg, int32_t* p, int32_t* q) {
  edt_binary_lines<T, T>(mask, n, 1, 1, s, out, arg, out, 1, p, q, threadIdx.x != 0);
}
template <typename T>
__global__ void no_background(Geometry g, int64_t start, T* out, int32_t* idx) {
  edt_no_background_line<T>(g, start, out, idx, 7, threadIdx.x != 0);
}
template <typename T>
__global__ void structure(const T* x, const double* w, T* out, int n) {
  StructureAcc<T> v = structure_first<T>(x[0], w[0]);
  for (int i = 1; i < n; ++i) {
    const StructureAcc<T> c = structure_candidate<T>(x[i], structure_weight<T>(w[i]));
    v = c < v ? c : v;
  }
  out[threadIdx.x] = structure_finish<T>(v);
}
template <int kRank>
__global__ void bf_pair(const int32_t* a, const int32_t* b, BfGeometry g, double* out) {
  out[threadIdx.x] = bf_key<kRank, kBfEuclidean>(a + 6 * threadIdx.x, b, g);
}
template __global__ void envelope<float>(const float*, int64_t, double, float*, int32_t*, int32_t*, double*);
template __global__ void envelope<double>(const double*, int64_t, double, double*, int32_t*, int32_t*, double*);
template __global__ void binary_lines<float>(const bool*, int64_t, double, float*, int32_t*, int32_t*, int32_t*);
template __global__ void binary_lines<double>(const bool*, int64_t, double, double*, int32_t*, int32_t*, int32_t*);
template __global__ void no_background<float>(Geometry, int64_t, float*, int32_t*);
template __global__ void no_background<double>(Geometry, int64_t, double*, int32_t*);
template __global__ void structure<float>(const float*, const double*, float*, int);
template __global__ void structure<double>(const double*, const double*, double*, int);
template __global__ void structure<int32_t>(const int32_t*, const double*, int32_t*, int);
template __global__ void bf_pair<3>(const int32_t*, const int32_t*, BfGeometry, double*);
template __global__ void bf_pair<0>(const int32_t*, const int32_t*, BfGeometry, double*);
"""


def _nvcc() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "nvcc").exists():
            return str(Path(root) / "bin" / "nvcc")
    return None


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    nvcc = _nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found (CUDA_HOME, PATH or /usr/local/cuda)")
    folder = tmp_path_factory.mktemp("ptx")
    (folder / "exact.cu").write_text(SOURCE)
    # -O3 and the default -fmad=true, as setup.py compiles csrc/cuda
    command = [nvcc, "-ptx", "-O3", "-arch=sm_90", "-std=c++17", f"-I{CSRC}", "exact.cu", "-o", "exact.ptx"]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return (folder / "exact.ptx").read_text()


def _functions(ptx: str) -> dict[str, str]:
    """The body of each PTX entry, by mangled name."""
    parts = re.split(r"^\.visible \.entry (\S+)\(", ptx, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_exact_kernels_have_no_fma(ptx):
    functions = _functions(ptx)
    assert len(functions) == 11, sorted(functions)
    fused = {name: body.count("fma.") for name, body in functions.items() if "fma." in body}
    assert not fused, f"nvcc contracted multiply-adds in {fused}"
    # the envelope's double arithmetic is there, each operation rounded on its own
    assert any("mul.rn.f64" in body for body in functions.values())


def test_no_background_lines_keep_no_per_axis_array(ptx):
    """edt_no_background_line decodes each coordinate on its own: no per-axis array in local memory
    (``__local_depot``) for the EDT's last pass on CUDA to carry. With an array of the axes' terms
    it had one (the runtime-rank find_boundaries check below shows such a check can fail)."""
    lines = {name: body for name, body in _functions(ptx).items() if "no_background" in name}
    assert len(lines) == 2
    assert not [name for name, body in lines.items() if "__local_depot" in body]


def test_nvcc_contracts_without_the_intrinsics(ptx, tmp_path):
    """The check can fail: the same expression written plainly compiles to an fma."""
    (tmp_path / "plain.cu").write_text(
        "__global__ void k(const double* f, double* out, double t) { out[0] = f[0] + t * t; }\n")
    done = subprocess.run([_nvcc(), "-ptx", "-O3", "-arch=sm_90", "plain.cu", "-o", "plain.ptx"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "fma.rn.f64" in (tmp_path / "plain.ptx").read_text()


# find_boundaries' decision of one voxel, as its CUDA launcher compiles it: for 1 to 3 axes, its rank.
BOUNDARY_SOURCE = r"""
#include "core/find_boundaries.h"
using namespace morphaug;

template <typename T, int kRank>
__global__ void boundary(const T* v, bool* out, BoundaryGeometry g, T background) {
  int32_t coord[kBoundaryMaxRank];
  for (int k = 0; k < fixed_rank<kRank>(g.rank); ++k) coord[k] = static_cast<int32_t>(threadIdx.x) % g.size[k];
  out[threadIdx.x] = boundary_voxel<kRank>(v, static_cast<int32_t>(threadIdx.x), coord, g, background, true);
}
template __global__ void boundary<int64_t, 1>(const int64_t*, bool*, BoundaryGeometry, int64_t);
template __global__ void boundary<int64_t, 2>(const int64_t*, bool*, BoundaryGeometry, int64_t);
template __global__ void boundary<int64_t, 3>(const int64_t*, bool*, BoundaryGeometry, int64_t);
template __global__ void boundary<uint8_t, 3>(const uint8_t*, bool*, BoundaryGeometry, uint8_t);
template __global__ void boundary<uint64_t, 3>(const uint64_t*, bool*, BoundaryGeometry, uint64_t);
template __global__ void boundary<int64_t, 0>(const int64_t*, bool*, BoundaryGeometry, int64_t);
"""


def test_find_boundaries_keeps_its_arrays_in_registers_up_to_3_axes(tmp_path):
    """No local memory (``__local_depot``) per thread where the rank is compiled in; the runtime rank
    (4 to 8 axes) has some, so the check can fail."""
    nvcc = _nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found (CUDA_HOME, PATH or /usr/local/cuda)")
    (tmp_path / "boundary.cu").write_text(BOUNDARY_SOURCE)
    command = [nvcc, "-ptx", "-O3", "-arch=sm_90", "-std=c++17", f"-I{CSRC}", "boundary.cu", "-o", "boundary.ptx"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    functions = _functions((tmp_path / "boundary.ptx").read_text())
    assert len(functions) == 6, sorted(functions)
    local = {name for name, body in functions.items() if "__local_depot" in body}
    assert local == {name for name in functions if "Li0E" in name}, sorted(local)
