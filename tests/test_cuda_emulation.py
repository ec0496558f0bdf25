"""Every CUDA kernel of csrc/cuda, run on the CPU by the emulator (``morphaug._C_emu``).

Each case below runs its op's CUDA launcher in four orders of blocks and
threads (forward, reverse, two seeded shuffles) and counts the elements that
differ from the CPU kernel and from SciPy; every count must be 0. The
launch counts say which kernels each case reached, and every ``__global__``
function of csrc/cuda must be reached: a kernel added without a case here
fails ``test_every_cuda_kernel_is_emulated``. The table printed at the end
lists, per kernel, the cases and orders run and the mismatches.

The emulator itself is checked on the probe kernels of csrc/emu/probes.cpp:
barriers, warp shuffles and ballots, atomics, order dependence and the
errors it reports.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from morphaug import _ops
from morphaug._ops import kernels as _native

from test_cuda_emu_binary import structure_case
from test_native import ball_footprint, centrosymmetric, chamfer, erosion_form, random_values, scipy_signed_edt
from test_cuda_emu_grey import emulation_case as grey_element_case
from test_cuda_emu_thinning2d import thinning_case
from test_thinning3d_native import thinning3d_case
from test_cuda_emu_measurements import emulation_cases as measurement_cases
from test_cuda_emu_watershed import emulation_cases as watershed_cases
from test_cuda_emu_expand import emulation_cases as expand_cases
from test_cuda_emu_boundaries import emulation_cases as boundary_cases
from test_cuda_emu_euler import emulation_cases as euler_cases
from test_cuda_emu_components import emulation_cases as component_cases
from test_cuda_emu_bf import emulation_cases as bf_cases
from test_cuda_emu_panoptic import emulation_cases as panoptic_cases

NATIVE, WHY_NO_NATIVE = _ops.load_native()
EMULATOR, WHY_NO_EMULATOR = _ops.load_emulation()
# Under `pytest -n 2 --dist loadgroup` the module runs on one worker: every case runs in every
# launch order once (the runs fixture).
pytestmark = [pytest.mark.skipif(NATIVE is None, reason=WHY_NO_NATIVE or ""),
              pytest.mark.xdist_group("test_cuda_emulation")]
needs_emulator = pytest.mark.skipif(EMULATOR is None, reason=WHY_NO_EMULATOR or "")

ORDERS = [("forward", 0), ("reverse", 0), ("shuffle", 1), ("shuffle", 2)]
CUDA_SOURCES = Path(__file__).resolve().parents[1] / "csrc" / "cuda"


@contextlib.contextmanager
def emulated(order: str, seed: int):
    """Native calls on CPU tensors go to the emulated CUDA launchers, in this order."""
    previous = os.environ.get("MORPHAUG_EMULATE_CUDA")
    os.environ["MORPHAUG_EMULATE_CUDA"] = "1"
    EMULATOR.set_order(order, seed)
    try:
        yield
    finally:
        EMULATOR.set_order("forward", 0)
        if previous is None:
            del os.environ["MORPHAUG_EMULATE_CUDA"]
        else:
            os.environ["MORPHAUG_EMULATE_CUDA"] = previous


def as_tuple(result):
    return tuple(t for t in (result if isinstance(result, tuple) else (result,)) if t is not None)


def differing(a: np.ndarray, b: np.ndarray, exact: bool) -> int:
    if a.shape != b.shape:
        return max(a.size, b.size)
    if exact:
        return int((~((a == b) | (np.isnan(a) & np.isnan(b)) if a.dtype.kind == "f" else a == b)).sum())
    return int((~np.isclose(a, b, rtol=1e-6, atol=0, equal_nan=True)).sum())


# --- cases: (name, op, call, scipy reference) ----------------------------------

def per_slice(x: np.ndarray, fn):
    """fn(slice) -> tuple of arrays, for every (b, c) slice, stacked as (..., B, C, *S)."""
    outputs = [fn(x[b, c]) for b, c in np.ndindex(x.shape[:2])]
    return tuple(np.stack([o[i] for o in outputs]).reshape(x.shape[:2] + outputs[0][i].shape)
                 for i in range(len(outputs[0])))


def edt_case(shape, sampling, indices, dtype, squared, density, seed, into=False):
    """``into``: the launcher's ``.out`` variant writes a tensor holding other values."""
    x = np.random.default_rng(seed).random(shape) < density
    mask = torch.from_numpy(x)

    def reference():
        distances, where = per_slice(x, lambda s: ndi.distance_transform_edt(s, sampling, return_indices=True))
        distances = distances ** 2 if squared else distances
        expected = [(distances, dtype == torch.float64 and not squared)]
        if indices:  # ties between equidistant voxels may differ with float32 and sampling
            exact_ties = dtype == torch.float64 or sampling is None
            expected.append((np.moveaxis(where, 2, 0), True) if exact_ties else None)
        return expected

    def call(device):
        out = torch.full(shape, 7.0, dtype=dtype, device=device) if into else None
        return _native.edt(mask.to(device), sampling, indices, dtype, squared, out=out)

    return call, reference


def cdt_case(shape, metric, indices, density, seed):
    x = np.random.default_rng(seed).random(shape) < density
    mask = torch.from_numpy(x)
    scipy_metric = metric if isinstance(metric, str) else np.asarray(metric)

    def reference():
        distances, where = per_slice(x, lambda s: ndi.distance_transform_cdt(s, scipy_metric, return_indices=True))
        return [(distances, True)] + ([(np.moveaxis(where, 2, 0), True)] if indices else [])

    structure = chamfer(metric, len(shape) - 2)
    return lambda device: _native.cdt(mask.to(device), structure, indices), reference


def grey_case(kind, shape, dtype, dilation, mode, origin, element, seed, into=False):
    """``into``: the launcher's ``.out`` variant writes a tensor holding other values."""
    rng = np.random.default_rng(seed)
    values = random_values(rng, shape, dtype)
    cval = True if dtype == torch.bool else (7 if not dtype.is_floating_point else -0.25)
    source = values.numpy()
    scipy_fn = ndi.grey_dilation if dilation else ndi.grey_erosion
    if kind == "grey_box":
        k_origin = erosion_form(dilation, element, origin)[0]
        run = lambda x, out: _native.grey_box(x, element, k_origin, mode, cval, dilation, out=out)  # noqa: E731
        kwargs = dict(size=element)
    elif kind == "grey_footprint":
        k_origin, k_element = erosion_form(dilation, element.shape, origin, element)
        run = lambda x, out: _native.grey_footprint(x, k_element, k_origin, mode, cval, dilation,  # noqa: E731
                                                    out=out)
        kwargs = dict(footprint=element)
    else:
        k_origin, k_element = erosion_form(dilation, element.shape, origin, element)
        run = lambda x, out: _native.grey_structure(x, k_element, None, k_origin, mode, cval,  # noqa: E731
                                                    dilation, out=out)
        kwargs = dict(structure=element)

    def call(device):
        x = values.to(device)
        return run(x, x.roll(1, -1) if into else None)

    def reference():
        modes = mode if kind == "grey_box" else mode[0]
        return [(per_slice(source, lambda s: (scipy_fn(s, origin=origin, mode=modes, cval=cval, **kwargs),))[0],
                 True)]

    return call, reference


def element_offsets(structure: np.ndarray):
    """The propagate / fill_holes element arguments of one shared (3,) * S structure."""
    rank = structure.ndim
    offsets = list(itertools.product((-1, 0, 1), repeat=rank))
    return torch.from_numpy(structure.reshape(-1).copy()), offsets


def propagate_case(shape, connectivity, masked, border, seed):
    rng = np.random.default_rng(seed)
    rank = len(shape) - 2
    structure = ndi.generate_binary_structure(rank, connectivity)
    flags, offsets = element_offsets(structure)
    seeds = rng.random(shape) < 0.05
    region = rng.random(shape) < 0.6
    weights = flags.expand(*shape[:2], -1).contiguous()
    mask = torch.from_numpy(region) if masked else None
    call = lambda device: _native.propagate(  # noqa: E731
        torch.from_numpy(seeds).to(device), None if mask is None else mask.to(device), weights.to(device),
        offsets, border)

    def reference():
        expected = [ndi.binary_propagation(seeds[b, c], structure, region[b, c] if masked else None,
                                           border_value=border) for b, c in np.ndindex(shape[:2])]
        return [(np.stack(expected).reshape(shape), True)]

    return call, reference


def fill_holes_case(shape, connectivity, seed):
    rng = np.random.default_rng(seed)
    structure = ndi.generate_binary_structure(len(shape) - 2, connectivity)
    flags, offsets = element_offsets(structure)
    x = rng.random(shape) < 0.55
    weights = flags.expand(*shape[:2], -1).contiguous()
    call = lambda device: _native.fill_holes(torch.from_numpy(x).to(device), weights.to(device), offsets)  # noqa: E731
    return call, lambda: [(per_slice(x, lambda s: (ndi.binary_fill_holes(s, structure),))[0], True)]


def ball_case(shape, radius, metric, erode, seed, into=False):
    """``into``: the launcher's ``.out`` variant writes a tensor holding other values."""
    x = np.random.default_rng(seed).random(shape) < 0.3
    radius, metric, erode = np.asarray(radius), np.asarray(metric), np.asarray(erode)

    def call(device):
        mask, *lead = (torch.from_numpy(a).to(device) for a in (x, radius, metric, erode))
        return _native.ball_morphology(mask, *lead, out=~mask if into else None)

    def reference():
        expected = []
        for b, c in np.ndindex(shape[:2]):
            op = ndi.binary_erosion if erode[b, c] else ndi.binary_dilation
            element = ball_footprint(metric[b, c], radius[b, c], len(shape) - 2)
            expected.append(op(x[b, c], element) if radius[b, c] else x[b, c])
        return [(np.stack(expected).reshape(shape), True)]

    return call, reference


def blob_masks(shape, seed):
    rng = np.random.default_rng(seed)
    grid = np.indices(shape[2:])
    x = np.zeros(shape, bool)
    for index in np.ndindex(shape[:2]):
        for _ in range(3):
            centre = rng.uniform(0, shape[2:]).reshape((-1,) + (1,) * (len(shape) - 2))
            x[index] |= ((grid - centre) ** 2).sum(0) <= rng.uniform(1, max(shape[2:]) / 3) ** 2
    x[0, 0] = False  # an empty slice: +D everywhere
    if shape[1] > 1:
        x[0, 1] = True  # a full one: -D
    return x


def signed_edt_case(shape, seed):
    x = blob_masks(shape, seed)
    return (lambda device: _native.signed_edt(torch.from_numpy(x).to(device)),
            lambda: [(per_slice(x, lambda s: (scipy_signed_edt(s),))[0], True)])


def scipy_label(x: np.ndarray, structure: np.ndarray):
    labels, n = ndi.label(x, structure)
    return labels, np.int64(n)


def label_case(x, structure, dtype=torch.int32):
    structure = np.asarray(structure, bool)
    return (lambda device: _native.label(torch.from_numpy(x).to(device), structure, dtype),
            lambda: [(a, True) for a in per_slice(x, lambda s: scipy_label(s, structure))])


def random_mask(shape, density, seed):
    return np.random.default_rng(seed).random(shape) < density


def empty_and_full(shape, seed):
    x = random_mask(shape, 0.5, seed)
    x[0, 0], x[0, 1] = False, True
    return x


HEXAGONAL = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], bool)  # a metric given as flags
CASES = {
    "edt 1-D": edt_case((2, 2, 37), None, True, torch.float32, False, 0.7, 1),
    "edt 2-D sampled": edt_case((2, 1, 11, 9), [1.5, 0.7], True, torch.float32, False, 0.8, 2),
    "edt 3-D float64": edt_case((1, 2, 6, 5, 7), [2.0, 1.0, 0.5], True, torch.float64, False, 0.85, 3),
    "edt 2-D squared, no background": edt_case((1, 2, 8, 6), None, False, torch.float32, True, 1.0, 4),
    "edt 4-D": edt_case((1, 1, 4, 3, 5, 4), None, True, torch.float64, True, 0.9, 5),
    "edt 3-D out": edt_case((2, 1, 6, 7, 5), [1.0, 0.5, 2.0], False, torch.float64, False, 0.8, 45, into=True),
    "edt 2-D squared out": edt_case((1, 2, 9, 8), None, False, torch.float32, True, 0.85, 46, into=True),
    "cdt chessboard": cdt_case((2, 1, 9, 11), "chessboard", True, 0.8, 6),
    "cdt taxicab 3-D": cdt_case((1, 2, 6, 5, 4), "taxicab", True, 0.85, 7),
    "cdt long rows": cdt_case((1, 1, 3, 600), "chessboard", True, 0.97, 8),
    "cdt flags": cdt_case((2, 2, 7, 8), HEXAGONAL, False, 0.75, 9),
    "cdt no background": cdt_case((1, 1, 5, 5), "taxicab", True, 1.0, 10),
    "cdt taxicab distances 3-D": cdt_case((2, 1, 6, 5, 33), "taxicab", False, 0.85, 47),
    "cdt chessboard distances 3-D": cdt_case((1, 2, 7, 4, 35), "chessboard", False, 0.9, 48),
    "grey_box float32": grey_case("grey_box", (2, 2, 12, 9), torch.float32, False, ["reflect", "constant"],
                                  [1, -1], [3, 4], 11),
    "grey_box uint8 3-D": grey_case("grey_box", (1, 2, 6, 7, 5), torch.uint8, True, ["wrap", "mirror", "nearest"],
                                    [0, 1, -1], [2, 3, 3], 12),
    "grey_box bool 1-D": grey_case("grey_box", (2, 1, 40), torch.bool, True, ["constant"], [0], [5], 13),
    "grey_footprint float32": grey_case("grey_footprint", (2, 1, 10, 11), torch.float32, False, ["mirror"] * 2,
                                        [0, 0], ndi.generate_binary_structure(2, 1), 14),
    "grey_footprint int16 3-D": grey_case("grey_footprint", (1, 2, 5, 6, 7), torch.int16, True, ["constant"] * 3,
                                          [1, 0, -1], np.random.default_rng(0).random((3, 2, 3)) < 0.6, 15),
    "grey_structure float64": grey_case("grey_structure", (2, 1, 9, 8), torch.float64, True, ["reflect"] * 2,
                                        [0, -1], np.arange(6.0).reshape(3, 2) / 4, 16),
    "grey_structure float32 3-D": grey_case("grey_structure", (1, 1, 5, 6, 4), torch.float32, False,
                                            ["nearest"] * 3, [0, 0, 0], np.full((3, 3, 3), 0.5), 17),
    "grey_box int32 out": grey_case("grey_box", (2, 1, 9, 7), torch.int32, False, ["mirror", "wrap"],
                                    [0, 1], [3, 4], 41, into=True),
    "grey_footprint uint8 3-D out": grey_case("grey_footprint", (1, 2, 5, 6, 7), torch.uint8, True,
                                              ["reflect"] * 3, [0, 1, -1],
                                              np.random.default_rng(1).random((3, 3, 2)) < 0.6, 42, into=True),
    "grey_structure int16 out": grey_case("grey_structure", (2, 1, 8, 9), torch.int16, False, ["nearest"] * 2,
                                          [-1, 1], np.arange(6.0).reshape(2, 3) - 2, 43, into=True),
    "grey_element int16 structure per slice": grey_element_case(1),
    "grey_element uint8 3-D footprint per sample": grey_element_case(2),
    "propagate 2-D masked": propagate_case((2, 2, 16, 13), 1, True, 0, 18),
    "propagate 3-D border": propagate_case((1, 2, 7, 8, 6), 3, True, 1, 19),
    "propagate unmasked": propagate_case((2, 1, 9, 10), 2, False, 0, 20),
    "fill_holes 2-D": fill_holes_case((2, 2, 14, 12), 1, 21),
    "fill_holes 3-D": fill_holes_case((1, 1, 8, 7, 9), 3, 22),
    "fill_holes 4-D (the tile kernels' run-time rank)": fill_holes_case((1, 2, 4, 5, 3, 6), 2, 51),
    "propagate 4-D masked, border": propagate_case((2, 1, 3, 4, 5, 4), 4, True, 1, 52),
    "ball 2-D": ball_case((2, 3, 15, 13), [[0, 2, 3], [1, 4, 2]], [[0, 0, 1], [2, 1, 0]],
                          [[False, True, False], [True, False, True]], 23),
    "ball 3-D": ball_case((1, 2, 9, 8, 7), [[2, 3]], [[0, 2]], [[False, True]], 24),
    "ball 3-D out": ball_case((2, 1, 8, 9, 7), [[3], [1]], [[1], [0]], [[True], [False]], 44, into=True),
    "ball radius 130": ball_case((1, 1, 300, 3), [[130]], [[0]], [[False]], 25),
    "binary_erosion 2-D per-slice elements": structure_case((2, 3, 37, 300), 45),
    "signed_edt 1-D": signed_edt_case((2, 2, 50), 26),
    "signed_edt 2-D": signed_edt_case((2, 2, 30, 25), 27),
    "signed_edt 3-D": signed_edt_case((1, 2, 12, 10, 9), 28),
    "label 2-D, several tiles": label_case(random_mask((2, 2, 70, 45), 0.55, 29),
                                           ndi.generate_binary_structure(2, 1)),
    "label 3-D 26-connected": label_case(random_mask((1, 2, 20, 19, 37), 0.3, 30), np.ones((3, 3, 3))),
    "label many small components": label_case(random_mask((1, 1, 96, 64), 0.25, 31),
                                              ndi.generate_binary_structure(2, 1)),
    "label 1-D, several tiles": label_case(random_mask((2, 1, 2500), 0.7, 32), np.ones(3)),
    "label 4-D random structure": label_case(random_mask((1, 2, 5, 6, 4, 7), 0.5, 33),
                                             centrosymmetric(np.random.default_rng(33), 4)),
    "label blobs, int64": label_case(blob_masks((2, 1, 40, 44), 34), np.ones((3, 3)), torch.int64),
    "label empty and full slices": label_case(empty_and_full((1, 2, 33, 40), 35), np.ones((3, 3))),
    "thinning2d zhang": thinning_case((9, 33), "zhang", 4, 49),
    "thinning2d guo_hall": thinning_case((17, 31), "guo_hall", 3, 50),
    "skeletonize parallel 3-D": thinning3d_case((9, 10, 11), 36),
    "skeletonize parallel one plane, a round a call": thinning3d_case((1, 12, 14), 37, rounds=1),
    **measurement_cases(),
    **watershed_cases(),
    **expand_cases(),
    **boundary_cases(),
    **euler_cases(),
    **component_cases(),
    **bf_cases(),
    **panoptic_cases(),
}
CPU_CANNOT = {"ball radius 130": "the CPU kernel takes radii up to 127"}


@pytest.fixture(scope="module")
def runs():
    """Per case and order: the kernels it launched and the mismatches with the CPU kernel and SciPy; under the
    automatic policy, so that the cases that call public functions (the measurements) reach their kernel in the
    torch leg too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MORPHAUG_BACKEND", "auto")
        return _runs()


def _runs() -> list[dict]:
    results = []
    for name, (call, reference) in CASES.items():
        cpu = None if name in CPU_CANNOT else [t.numpy() for t in as_tuple(call("cpu"))]
        expected = reference()
        for order, seed in ORDERS:
            before = EMULATOR.launch_counts()
            with emulated(order, seed):
                got = [t.numpy() for t in as_tuple(call("cpu"))]
            after = EMULATOR.launch_counts()
            kernels = sorted(k for k, v in after.items() if v[0] > before.get(k, (0,))[0])
            vs_cpu = 0 if cpu is None else sum(differing(g, c, True) for g, c in zip(got, cpu, strict=True))
            vs_scipy = sum(differing(g, e[0], e[1]) for g, e in zip(got, expected) if e is not None)
            results.append(dict(case=name, order=f"{order}/{seed}", kernels=kernels, cpu=vs_cpu,
                                scipy=vs_scipy, outputs=len(got) == len(expected)))
    return results


@needs_emulator
def test_every_case_matches_the_cpu_kernels_and_scipy_in_every_order(runs):
    bad = [r for r in runs if r["cpu"] or r["scipy"] or not r["outputs"] or not r["kernels"]]
    assert not bad, bad


def cuda_kernels() -> set[str]:
    """``file:name`` of every __global__ function in csrc/cuda (the launchers' .cu and the .cuh they share;
    the emulator reports a shared kernel under the .cu that launched it)."""
    found = set()
    for path in sorted(CUDA_SOURCES.glob("*.cu*")):
        text = path.read_text()
        for match in re.finditer(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s*)?(\w+)\s*\(", text):
            found.add(f"{path.name}:{match.group(1)}")
    return found


@pytest.mark.cuda
@pytest.mark.parametrize("name", list(CASES))
def test_every_case_on_the_gpu(name):
    """The same cases on a real GPU (scripts/gpu_check.sh): CUDA kernels against the CPU ones and SciPy."""
    if not _ops.built_for("edt", "cuda"):
        pytest.skip("morphaug._C was built without CUDA kernels")
    call, reference = CASES[name]
    got = [t.cpu().numpy() for t in as_tuple(call("cuda"))]
    if name not in CPU_CANNOT:
        for g, c in zip(got, as_tuple(call("cpu")), strict=True):
            assert differing(g, c.numpy(), True) == 0
    for g, e in zip(got, reference()):
        assert e is None or differing(g, e[0], e[1]) == 0


@needs_emulator
def test_every_cuda_kernel_is_emulated(runs, capsys):
    kernels = cuda_kernels()
    assert len(kernels) >= 18  # the parser still finds the kernels
    def launched(kernel, run):
        shared = kernel.split(":")[0].endswith(".cuh")
        return any(k == kernel or (shared and k.split(":")[1] == kernel.split(":")[1]) for k in run["kernels"])

    missing = sorted(k for k in kernels if not any(launched(k, r) for r in runs))
    assert not missing, f"CUDA kernels without an emulated case: {missing}"
    with capsys.disabled():
        print("\nCUDA kernels in emulation (cases x orders, elements differing from the CPU kernels / SciPy):")
        for kernel in sorted(kernels):
            mine = [r for r in runs if launched(kernel, r)]
            cases = sorted({r["case"] for r in mine})
            orders = sorted({r["order"] for r in mine})
            print(f"  {kernel:<40} {len(cases):>2} cases x {len(orders)} orders: "
                  f"{sum(r['cpu'] for r in mine)} / {sum(r['scipy'] for r in mine)} mismatches")


@needs_emulator
def test_launch_counts_name_the_source_and_the_kernel():
    before = EMULATOR.launch_counts().get("edt.cu:binary_pass_kernel", (0, 0, 0))
    with emulated("forward", 0):
        _native.edt(torch.ones(1, 1, 5, dtype=torch.bool))
    launches, blocks, threads = EMULATOR.launch_counts()["edt.cu:binary_pass_kernel"]
    assert launches == before[0] + 1 and blocks == before[1] + 1 and threads == before[2] + 256


@needs_emulator
def test_orders_are_checked():
    with pytest.raises(RuntimeError, match="order must be 'forward', 'reverse' or 'shuffle'"):
        EMULATOR.set_order("sideways")
    assert EMULATOR.get_order() == ("forward", 0)


@pytest.mark.usefixtures("native_policy")
@needs_emulator
def test_select_follows_the_cuda_kernels_when_emulating(monkeypatch):
    x = torch.zeros(1, 1, 4, 4)
    monkeypatch.setenv("MORPHAUG_EMULATE_CUDA", "1")
    assert _ops.use_native("edt", x.bool())
    assert not _ops.use_native("sinkhorn_scaling", x[0, 0])  # no CUDA kernel: the GPU's choice
    assert _ops.backend_info(verbose=False)["emulating_cuda"]


# --- the emulator's model, on the probe kernels ----------------------------------

PROBES = torch.ops.morphaug_emu if EMULATOR is not None else None


@needs_emulator
@pytest.mark.parametrize("order, seed", ORDERS)
def test_barriers_and_shuffles_scan_a_block(order, seed):
    """A block-wide inclusive scan by warp shuffles and __syncthreads, 1 to 4 blocks."""
    EMULATOR.set_order(order, seed)
    try:
        for threads in (32, 96, 256):
            x = torch.randint(0, 100, (3, threads), dtype=torch.int32)
            torch.testing.assert_close(PROBES.probe_block_scan(x), x.cumsum(1, dtype=torch.int32))
    finally:
        EMULATOR.set_order("forward", 0)


@needs_emulator
def test_ballots_vote_per_warp():
    x = torch.rand(128) < 0.5
    bits = PROBES.probe_ballot(x)
    expected = [sum(int(v) << lane for lane, v in enumerate(x[w * 32:(w + 1) * 32].tolist())) for w in range(4)]
    assert [b & 0xFFFFFFFF for b in bits.tolist()] == expected


@needs_emulator
def test_order_dependence_shows_up_as_a_mismatch():
    """The last thread to write wins: forward, reverse and shuffled orders disagree."""
    seen = set()
    for order, seed in ORDERS:
        EMULATOR.set_order(order, seed)
        seen.add(int(PROBES.probe_last_writer(4, 64)))
    EMULATOR.set_order("forward", 0)
    assert seen >= {255, 0} and len(seen) >= 3


@needs_emulator
def test_shuffled_atomics_interleave_threads():
    """A read-then-add race (load, atomicAdd of the stale value): exact only without interleaving."""
    EMULATOR.set_order("forward", 0)
    assert int(PROBES.probe_atomic_race(256)) == 256
    EMULATOR.set_order("shuffle", 3)
    racy = int(PROBES.probe_atomic_race(256))
    EMULATOR.set_order("forward", 0)
    assert racy != 256
    assert int(PROBES.probe_atomic_sum(256)) == 256 * 255 // 2  # atomics alone never lose an update


@needs_emulator
@pytest.mark.parametrize("probe, message", [
    (lambda: PROBES.probe_launch(0, 32), r"invalid grid \(0, 1, 1\)"),
    (lambda: PROBES.probe_launch(1, 2048), r"invalid block \(2048, 1, 1\)"),
    (lambda: PROBES.probe_exited_lane(), "deadlock"),
    (lambda: PROBES.probe_partial_warp(), "does not have"),
    (lambda: PROBES.probe_divergent_barrier(), "deadlock"),
])
def test_the_emulator_reports_what_a_gpu_would_not(probe, message):
    with pytest.raises(RuntimeError, match=message):
        probe()
