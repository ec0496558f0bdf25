"""The GPU questions, settled in one run: ``scripts/gpu_check.sh`` builds, then runs this.

    python scripts/gpu_check.py [--out DIR] [--dry-run] [--stage NAME ...]

Stages, in order of importance, so that a run cut off still reports the most
important facts; after each one ``gpu_check.json`` and ``gpu_check.md`` in
``--out`` are rewritten. The exit status is 1 when any stage failed (a
mismatch, a sync, a sanitizer error), 0 otherwise; a stage that cannot run
here is ``skipped`` with its reason.

1. ``versions``: torch, CUDA, device, build time (``MORPHAUG_BUILD_SECONDS``), kernels built.
2. ``tests``: ``pytest -m cuda`` (the emulated cases of tests/test_cuda_emulation.py run
   as real CUDA tests among them); optional libraries missing are skipped by the tests.
3. ``sanitizer``: compute-sanitizer memcheck, racecheck and synccheck over one tiny call
   of every public function (``--tiny``), morphaug's kernels only.
4. ``sync_debug``: every call of ``benchmarks/gpu_cost.py`` under
   ``torch.cuda.set_sync_debug_mode("error")``, except inside the reads of
   ``morphaug._sync.READS``.
5. ``timings``: per kernel, CUDA-event times on an 8x1x256^3 batch and the GB/s of its
   ideal bytes (input + output) against a device-to-device copy of the same run.
6. ``peers``: cupyx.scipy.ndimage (batched where it allows) and SciPy side by side, with
   parity on two slices.
7. ``adversarial``: a spiral for propagation and fill holes, one snake-shaped component for label, one far
   background voxel for the EDT, all-foreground slices; against SciPy.
8. ``edt_float64``: anisotropic sampling, float64 distances and indices equal to SciPy's.
9. ``huge``: label and EDT on a batch of more than 2^31 voxels, checked on three slices.

``--dry-run`` runs the same stages on the CPU through the emulator of the CUDA
launchers (``MORPHAUG_EMULATE_CUDA=1``, ``morphaug._C_emu``) at small sizes,
skipping what needs a GPU (sanitizer, sync debug mode, event timings, cupyx,
the 2^31 case) with the reason: ``tests/test_gpu_check.py`` runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
STAGES = ["versions", "tests", "sanitizer", "sync_debug", "timings", "peers", "adversarial", "edt_float64", "huge"]


class Skip(Exception):
    """A stage that cannot run here; the message says why."""


class Report:
    """The stages' results, written as JSON and Markdown after each stage."""

    def __init__(self, out: Path, dry_run: bool):
        self.out, self.dry_run, self.stages = out, dry_run, {}
        out.mkdir(parents=True, exist_ok=True)

    def run(self, name, fn, *args):
        start = time.perf_counter()
        try:
            details = fn(*args)
            failures = details.pop("failures", [])
            status = "fail" if failures else "pass"
        except Skip as skip:
            details, failures, status = {"reason": str(skip)}, [], "skipped"
        except Exception as error:  # a stage that breaks is a failure, reported with its traceback
            details, failures, status = {"traceback": traceback.format_exc()}, [repr(error)], "fail"
        self.stages[name] = dict(status=status, seconds=round(time.perf_counter() - start, 2),
                                 failures=failures, **details)
        print(f"== {name}: {status} ({self.stages[name]['seconds']} s)"
              + "".join(f"\n   {f}" for f in failures[:10]), flush=True)
        self.write()

    @property
    def failed(self) -> bool:
        return any(stage["status"] == "fail" for stage in self.stages.values())

    def write(self):
        data = {"dry_run": self.dry_run, "failed": self.failed, "stages": self.stages}
        (self.out / "gpu_check.json").write_text(json.dumps(data, indent=2, default=str))
        lines = [f"# gpu_check{' (dry run on the CPU emulator)' if self.dry_run else ''}", "",
                 "| stage | status | seconds | failures / reason |", "|---|---|---:|---|"]
        for name, stage in self.stages.items():
            why = "; ".join(stage["failures"][:3]) or stage.get("reason", "")
            lines.append(f"| {name} | {stage['status']} | {stage['seconds']} | {why} |")
        for name, stage in self.stages.items():
            if stage.get("table"):
                lines += ["", f"## {name}", "", stage["table"]]
        (self.out / "gpu_check.md").write_text("\n".join(lines) + "\n")


# --------------------------------------------------------------------------- helpers
def _torch():
    import torch

    return torch


def _device(dry_run):
    return _torch().device("cpu" if dry_run else "cuda")


def _needs_gpu(dry_run, what):
    if dry_run:
        raise Skip(f"{what} needs a GPU (dry run)")


def _blobs(shape, seed=0, sigma=3.0):
    """Smooth random blobs, about half foreground, per slice."""
    import scipy.ndimage as ndi

    rng = np.random.default_rng(seed)
    field = ndi.gaussian_filter(rng.standard_normal(shape), (0, 0) + (sigma,) * (len(shape) - 2))
    return field > 0


def _gpu_cost():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_cost

    return gpu_cost


def _compare(name, got, expected, failures, exact=True):
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        failures.append(f"{name}: shape {got.shape} != SciPy's {expected.shape}")
        return
    bad = int((got != expected).sum()) if exact else int((~np.isclose(got, expected, rtol=1e-6, atol=1e-6)).sum())
    if bad:
        failures.append(f"{name}: {bad} values differ from SciPy")


# --------------------------------------------------------------------------- stages
def versions(dry_run):
    torch = _torch()
    from morphaug import _ops

    info = _ops.backend_info(verbose=False)
    found = {name: importlib.util.find_spec(name) is not None
             for name in ("scipy", "cupy", "triton", "hypothesis", "skimage", "monai", "kornia", "ot", "torchvision")}
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    nvcc_version = (subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
                    or ["?"])[-1] if Path(nvcc).exists() else None
    details = dict(python=platform.python_version(), torch=torch.__version__, cuda=torch.version.cuda, nvcc=nvcc_version,
                   device=torch.cuda.get_device_name() if torch.cuda.is_available() else None,
                   build_seconds=os.environ.get("MORPHAUG_BUILD_SECONDS"), native_devices=info["native_devices"],
                   emulating_cuda=_ops.emulating_cuda(), packages=found, failures=[])
    if dry_run:
        if _ops.load_emulation()[0] is None:
            details["failures"].append("morphaug._C_emu is not built: the dry run needs the emulator")
    elif "cuda" not in info["native_devices"]:
        details["failures"].append("morphaug._C has no CUDA kernels")
    return details


def tests(dry_run, out):
    """pytest -m cuda over tests/ (dry run: over tests/test_cuda_emulation.py, where every case skips)."""
    junit = out / "pytest.xml"
    targets = ["tests/test_cuda_emulation.py"] if dry_run else ["tests"]
    command = [sys.executable, "-m", "pytest", "-m", "cuda", "-q", "-p", "no:cacheprovider",
               f"--junitxml={junit}", *targets]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240 if not dry_run else 120)
    (out / "pytest.log").write_text(done.stdout + done.stderr)
    summary = (done.stdout.strip().splitlines() or [""])[-1]
    failures = [] if done.returncode in (0, 5) else [f"pytest exit {done.returncode}: {summary}"]
    return dict(command=" ".join(command), summary=summary, failures=failures)


def tiny_calls(device):
    """One tiny call of every public function (gpu_cost's calls at side 6): every kernel runs once."""
    torch = _torch()
    for entry in _gpu_cost().CALLS:
        fn, args, kwargs = entry.make(device, 6)
        fn(*args, **kwargs)
    if device.type == "cuda":
        torch.cuda.synchronize()


def sanitizer(dry_run, out):
    if dry_run:
        tiny_calls(_device(True))  # the calls the sanitizer would watch run, on the emulator
        raise Skip("compute-sanitizer needs a GPU (dry run: the tiny calls ran on the emulator)")
    tool = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    if not Path(tool).exists():
        raise Skip("compute-sanitizer not found")
    failures, logs = [], {}
    for check in ("memcheck", "racecheck", "synccheck"):
        log = out / f"sanitizer-{check}.log"
        command = [tool, f"--tool={check}", "--kernel-name", "kns=morphaug", "--error-exitcode=1",
                   f"--log-file={log}", sys.executable, str(Path(__file__).resolve()), "--tiny"]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=150)
        logs[check] = done.returncode
        if done.returncode:
            failures.append(f"{check}: exit {done.returncode}, see {log.name}")
    return dict(exit_codes=logs, failures=failures)


def sync_debug(dry_run):
    _needs_gpu(dry_run, "torch.cuda.set_sync_debug_mode")
    torch = _torch()
    from morphaug import _sync

    @contextlib.contextmanager
    def allowed():
        previous = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode(0)
        try:
            yield
        finally:
            torch.cuda.set_sync_debug_mode(previous)

    def exempt(function):
        def call(*args, **kwargs):
            with allowed():
                return function(*args, **kwargs)
        return call

    patched = [(_sync, "host_read")]
    originals = [getattr(module, name) for module, name in patched]
    failures = []
    for (module, name), original in zip(patched, originals):
        setattr(module, name, exempt(original))
    try:
        for entry in _gpu_cost().CALLS:
            fn, args, kwargs = entry.make(torch.device("cuda"), 32)
            torch.cuda.synchronize()
            torch.cuda.set_sync_debug_mode("error")
            try:
                fn(*args, **kwargs)
            except RuntimeError as error:
                failures.append(f"{entry.name}: {str(error).splitlines()[0]}")
            finally:
                torch.cuda.set_sync_debug_mode(0)
    finally:
        for (module, name), original in zip(patched, originals):
            setattr(module, name, original)
    return dict(calls=len(_gpu_cost().CALLS), failures=failures)


def _kernel_cases(torch, device, n, batch):
    from morphaug import footprints, measure, morphology, ndimage, transforms
    from morphaug._ops import kernels

    mask = torch.from_numpy(_blobs((batch, 1, n, n, n))).to(device)
    values = torch.rand(mask.shape, device=device)
    maze = torch.zeros_like(mask)  # in each plane, rows joined at alternating ends: long chains across tiles
    maze[..., ::2, :] = True
    maze[..., 1::4, -1] = True
    maze[..., 3::4, 0] = True
    seeds = torch.zeros_like(mask)
    seeds[..., 0, 0, 0] = True
    ball = footprints.ball(2, 3)
    # a radius-1 or radius-2 ball per sample, in one 5^3 box (RandGreyMorphology's draws)
    per_sample = footprints.footprints_from_params(torch.zeros(batch, dtype=torch.long, device=device),
                                                   torch.arange(batch, device=device) % 2 + 1, ("ball",), 2, 3)
    labels = mask.int() + (values > 0.5).int()  # labels 0, 1, 2
    wide = labels.long()
    many = (values * 200).int()  # 200 labels: the region tables in global memory
    draws = torch.rand(mask.shape[:2], device=device)  # pick_component: a component per slice
    # watershed_ift: a thread floods each slice, so many small slices (up to 1024 of 64^2), 4 values, 2% markers
    plains = (values.reshape(-1)[:min(1024, values.numel() // 4096) * 4096].reshape(-1, 1, 64, 64) * 4).byte()
    sources = torch.randint(-1, 3, plains.shape, device=device, dtype=torch.int16)
    sources *= torch.rand(plains.shape, device=device) < 0.02
    components = ndimage.label(mask)[0]  # instances for panoptic_confusion
    grey_morphology = {mode: transforms.RandGreyMorphology("image", radius=2, prob=1.0, mode=mode)
                       for mode in ("reflect", "constant")}
    grey_params = grey_morphology["reflect"].make_params(values)
    corners = mask[..., :32, :32, :32].contiguous()  # distance_bf compares every voxel with the slice's candidates
    # name, call, ideal bytes (input + output)
    voxels = mask.numel()
    return [
        ("edt", lambda: ndimage.distance_transform_edt(mask), voxels * 5),
        ("edt sampled float64 + indices", lambda: ndimage.distance_transform_edt(
            mask, sampling=(1.0, 0.7, 2.0), return_indices=True), voxels * (1 + 3 * 4 + 4)),
        ("edt + indices (int32 hulls, indices in place)", lambda: ndimage.distance_transform_edt(
            mask, return_indices=True), voxels * (1 + 4 + 3 * 4)),
        ("edt squared float64", lambda: kernels.edt(mask, None, False, torch.float64, True), voxels * 9),
        ("signed_edt", lambda: kernels.signed_edt(mask), voxels * 5),
        ("expand_labels distance 3", lambda: kernels.expand_labels(labels, [1.0] * 3, 3.0), voxels * 8),
        ("expand_labels inf, sampled", lambda: kernels.expand_labels(labels, (1.0, 0.7, 2.0), math.inf), voxels * 8),
        ("euler_number 26-connected", lambda: measure.euler_number(mask), voxels),
        ("find_boundaries thick 3 labels int32", lambda: kernels.find_boundaries(labels, 1, "thick", 0), voxels * 5),
        ("find_boundaries outer 26-connected int64", lambda: kernels.find_boundaries(wide, 3, "outer", 0),
         voxels * 9),
        ("panoptic_confusion 200 scattered ids int32", lambda: kernels.panoptic_confusion(many, many.roll(1, -1), 0.5),
         voxels * 8),
        ("panoptic_confusion components int32, shifted", lambda: kernels.panoptic_confusion(
            components, components.roll(1, -1), 0.5), voxels * 8),
        ("distance_bf euclidean, 32^3 corners of the slices (brute force)",
         lambda: ndimage.distance_transform_bf(corners), corners.numel() * 5),
        ("cdt chessboard", lambda: ndimage.distance_transform_cdt(mask, metric="chessboard"), voxels * 5),
        ("cdt taxicab", lambda: ndimage.distance_transform_cdt(mask, metric="taxicab"), voxels * 5),
        ("cdt chessboard + indices (raster)", lambda: ndimage.distance_transform_cdt(
            mask, metric="chessboard", return_indices=True), voxels * (1 + 4 + 3 * 4)),
        ("grey_box erosion size 3", lambda: ndimage.grey_erosion(values, size=3), voxels * 8),
        ("grey_box erosion size 7", lambda: ndimage.grey_erosion(values, size=7), voxels * 8),
        ("grey_footprint ball r2", lambda: ndimage.grey_erosion(values, footprint=ball), voxels * 8),
        ("grey_structure 3^3", lambda: ndimage.grey_erosion(values, structure=np.full((3, 3, 3), 0.5)), voxels * 8),
        ("grey_element ball r2 per sample", lambda: ndimage.grey_erosion(values, footprint=per_sample), voxels * 8),
        ("grey_element 5^3 structure per sample", lambda: ndimage.grey_dilation(
            values, footprint=per_sample, structure=per_sample.double() / 2), voxels * 8),
        # the transform's whole-batch path: two per-sample extrema (reflect), against every op's (constant)
        ("RandGreyMorphology r2, 7 ops, reflect (2 grey_element passes)", lambda: grey_morphology["reflect"](
            values, params=grey_params), voxels * 8),
        ("RandGreyMorphology r2, 7 ops, constant (4 grey_element passes)", lambda: grey_morphology["constant"](
            values, params=grey_params), voxels * 8),
        ("label 26-connected", lambda: ndimage.label(mask, np.ones((3, 3, 3))), voxels * 5),
        ("label 6-connected", lambda: ndimage.label(mask), voxels * 5),
        ("label maze", lambda: ndimage.label(maze), voxels * 5),
        ("label_values 3 values 26-connected", lambda: measure.label(labels), voxels * (4 + 8)),
        ("filter_components keep 1 26-connected", lambda: kernels.filter_components(mask, 3, 1, 0), voxels * 2),
        ("filter_components min_size 64 6-connected", lambda: kernels.filter_components(mask, 1, 0, 64), voxels * 2),
        ("pick_component max_size 1000 26-connected", lambda: kernels.pick_component(mask, 3, draws, 1000), voxels * 2),
        ("ball_morphology erosion r2", lambda: ndimage.binary_erosion(mask, ball), voxels * 2),
        ("binary_erosion 3^3 connectivity 2, border 1", lambda: ndimage.binary_erosion(
            mask, ndimage.generate_binary_structure(3, 2), border_value=1), voxels * 2),
        ("binary_erosion hit-or-miss 3^3", lambda: ndimage.binary_hit_or_miss(mask), voxels * 2),
        ("fill_holes", lambda: ndimage.binary_fill_holes(mask), voxels * 2),
        ("fill_holes 26-connected", lambda: ndimage.binary_fill_holes(mask, np.ones((3, 3, 3))), voxels * 2),
        ("fill_holes maze", lambda: ndimage.binary_fill_holes(maze), voxels * 2),
        ("propagate", lambda: ndimage.binary_propagation(mask, mask=mask | torch.roll(mask, 1, -1)), voxels * 3),
        ("propagate maze", lambda: ndimage.binary_propagation(seeds, mask=maze), voxels * 3),
        ("thinning2d skeletonize zhang (planes as one 2-D image)",
         lambda: morphology.skeletonize(mask.reshape(batch, 1, n * 16, -1)), voxels * 2),
        ("thinning2d thin (planes as one 2-D image)", lambda: morphology.thin(mask.reshape(batch, 1, n * 16, -1)),
         voxels * 2),
        ("skeletonize parallel", lambda: morphology.skeletonize(mask, method="parallel"), voxels * 2),
        ("region_stats mean, 3 labels", lambda: ndimage.mean(values, labels, [0, 1, 2]), voxels * 8),
        ("region_stats extrema, 3 labels (two passes)", lambda: ndimage.extrema(values, labels, [0, 1, 2]),
         voxels * 16),
        ("region_stats variance, 200 labels (two passes)", lambda: ndimage.variance(values, many, list(range(200))),
         voxels * 16),
        ("region_stats find_objects, 2 labels", lambda: ndimage.find_objects(labels, 2), voxels * 8),
        ("region_histogram 32 bins, 3 labels", lambda: ndimage.histogram(values, 0.0, 1.0, 32, labels, [0, 1, 2]),
         voxels * 8),
        ("region_histogram 64 bins, 200 labels (global counts)", lambda: ndimage.histogram(
            values, 0.0, 1.0, 64, many, list(range(200))), voxels * 8),
        ("region_median 3 labels (float32: 5 passes)", lambda: ndimage.median(values, labels, [0, 1, 2]),
         voxels * 8),
        ("region_median 200 labels (global digit counts)", lambda: ndimage.median(values, many, list(range(200))),
         voxels * 8),
        ("watershed_ift, slices of 64^2 (a thread each)", lambda: ndimage.watershed_ift(plains, sources),
         plains.numel() * 5),
    ], mask


def timings(dry_run):
    torch = _torch()
    device = _device(dry_run)
    n, batch, repeat = (16, 2, 1) if dry_run else (256, 8, 5)
    cases, mask = _kernel_cases(torch, device, n, batch)
    rows = []

    def measure(fn):
        fn()  # warm-up: allocations, first launches
        if dry_run:
            start = time.perf_counter()
            fn()
            return time.perf_counter() - start
        times = []
        for _ in range(repeat):
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            fn()
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end) / 1e3)
        return float(np.median(times))

    values = torch.rand(mask.shape, device=device)
    target = torch.empty_like(values)
    copy_s = measure(lambda: target.copy_(values))
    copy_gbs = 2 * values.numel() * 4 / copy_s / 1e9
    for name, fn, ideal in cases:
        seconds = measure(fn)
        gbs = ideal / seconds / 1e9
        rows.append(dict(kernel=name, ms=seconds * 1e3, gbs=gbs, of_copy=gbs / copy_gbs))
    shape = "x".join(map(str, mask.shape))
    table = "\n".join([f"{shape}, device-to-device copy {copy_gbs:.0f} GB/s"
                       + (" (dry run: CPU wall times on the emulator, not GPU numbers)" if dry_run else ""), "",
                       "| kernel | ms | GB/s (ideal bytes) | of copy |", "|---|---:|---:|---:|"]
                      + [f"| {r['kernel']} | {r['ms']:.2f} | {r['gbs']:.1f} | {r['of_copy']:.2f} |" for r in rows])
    return dict(rows=rows, copy_gbs=copy_gbs, table=table, failures=[])


def peers(dry_run):
    import scipy.ndimage as ndi

    torch = _torch()
    from morphaug import ndimage

    device = _device(dry_run)
    cupy = cndi = None
    if not dry_run and importlib.util.find_spec("cupy") is not None:
        import cupy
        import cupyx.scipy.ndimage as cndi
    shapes = [(2, 1, 12, 12, 12)] if dry_run else [(16, 1, 128, 128, 128), (64, 1, 512, 512)]
    rows, failures = [], []

    def clock(fn, sync):
        fn()
        sync()
        start = time.perf_counter()
        fn()
        sync()
        return time.perf_counter() - start

    torch_sync = (lambda: None) if dry_run else torch.cuda.synchronize
    for shape in shapes:
        mask = _blobs(shape)
        values = np.random.default_rng(1).random(shape, dtype=np.float32)
        m, v = torch.from_numpy(mask).to(device), torch.from_numpy(values).to(device)
        rank = len(shape) - 2
        full = np.ones((3,) * rank, bool)
        box = (1,) * (2) + (7,) * rank
        cases = [  # name, ours, SciPy on one (spatial) slice, cupyx on the batch (None: a loop over slices)
            ("edt", lambda: ndimage.distance_transform_edt(m), ndi.distance_transform_edt, None, mask),
            ("grey_erosion size 7", lambda: ndimage.grey_erosion(v, size=7),
             lambda s: ndi.grey_erosion(s, size=7), lambda c: cndi.grey_erosion(c, size=box), values),
            ("label full", lambda: ndimage.label(m, full)[0], lambda s: ndi.label(s, full)[0], None, mask),
        ]
        for name, ours, scipy_fn, batched, source in cases:
            ours_s = clock(ours, torch_sync)
            got = ours()[:2, 0].cpu().numpy()
            expected = np.stack([scipy_fn(s) for s in source[:2, 0]])
            _compare(f"{name} {shape}", got, expected, failures, exact=name != "edt")
            start = time.perf_counter()
            for s in source[:, 0]:
                scipy_fn(s)
            scipy_s = time.perf_counter() - start
            cupy_s, how = None, "-"
            if cupy is not None:
                batch = cupy.asarray(source)
                if batched is not None:
                    cupy_s, how = clock(lambda: batched(batch), cupy.cuda.Device().synchronize), "batched"
                else:
                    one = {"edt": cndi.distance_transform_edt, "label full": lambda c: cndi.label(c, full)[0]}[name]
                    cupy_s = clock(lambda: [one(batch[i, 0]) for i in range(len(batch))],
                                   cupy.cuda.Device().synchronize)
                    how = "loop over slices"
            rows.append(dict(case=name, shape="x".join(map(str, shape)), ours_ms=ours_s * 1e3, scipy_ms=scipy_s * 1e3,
                             cupyx_ms=None if cupy_s is None else cupy_s * 1e3, cupyx=how))
    table = "\n".join(["| case | shape | morphaug ms | SciPy ms (loop) | cupyx ms | cupyx call |", "|---|---|---:|---:|---:|---|"]
                      + [f"| {r['case']} | {r['shape']} | {r['ours_ms']:.2f} | {r['scipy_ms']:.1f} | "
                         f"{'-' if r['cupyx_ms'] is None else format(r['cupyx_ms'], '.2f')} | {r['cupyx']} |" for r in rows])
    return dict(rows=rows, table=table, cupyx="missing" if cupy is None else cupy.__version__, failures=failures)


def spiral(n):
    """A one-voxel-wide spiral corridor in an n x n image (walls between its turns)."""
    image = np.zeros((n, n), bool)
    top, left, bottom, right = 0, 0, n - 1, n - 1
    while top <= bottom and left <= right:
        image[top, left:right + 1] = True
        image[top:bottom + 1, right] = True
        if top + 2 <= bottom:
            image[bottom, left:right + 1] = True
        if left + 2 <= right:
            image[top + 2:bottom + 1, left] = True
        top, left, bottom, right = top + 2, left + 2, bottom - 2, right - 2
    return image


def adversarial(dry_run):
    import scipy.ndimage as ndi
    import skimage.measure

    torch = _torch()
    from morphaug import measure, morphology, ndimage, segmentation

    device = _device(dry_run)
    n = 64 if dry_run else 1024
    failures = []
    corridor = spiral(n)
    seed = np.zeros_like(corridor)
    seed[0, 0] = True
    got = ndimage.binary_propagation(torch.from_numpy(seed)[None, None].to(device),
                                     mask=torch.from_numpy(corridor)[None, None].to(device))
    _compare("spiral propagation", got[0, 0].cpu().numpy(), ndi.binary_propagation(seed, mask=corridor), failures)
    walls = ~corridor
    walls[n // 2 - 2:n // 2 + 2, n // 2 - 2:n // 2 + 2] = False  # a hole at the spiral's end
    got = ndimage.binary_fill_holes(torch.from_numpy(walls)[None, None].to(device))
    _compare("spiral fill_holes", got[0, 0].cpu().numpy(), ndi.binary_fill_holes(walls), failures)
    snake = np.zeros((n, n), bool)  # one component: rows joined at alternating ends
    snake[::2] = True
    snake[1::4, -1] = True
    snake[3::4, 0] = True
    labels, count = ndimage.label(torch.from_numpy(snake)[None, None].to(device))
    _compare("snake label", labels[0, 0].cpu().numpy(), ndi.label(snake)[0], failures)
    serpents = np.where(snake, 3, 8)  # the snake and the gaps between its rows: two values, no background
    got = measure.label(torch.from_numpy(serpents)[None, None].to(device), background=-1)
    _compare("snake label_values", got[0, 0].cpu().numpy(), skimage.measure.label(serpents, background=-1), failures)
    side = 24 if dry_run else 160
    far = np.ones((side, side, side), bool)
    far[0, 0, 0] = False
    full = np.ones_like(far)
    batch = torch.from_numpy(np.stack([far, full]))[:, None].to(device)
    for name, call, reference in [
        ("edt", lambda x: ndimage.distance_transform_edt(x, return_indices=True),
         lambda s: ndi.distance_transform_edt(s, return_indices=True)),
        ("cdt", lambda x: ndimage.distance_transform_cdt(x, return_indices=True),
         lambda s: ndi.distance_transform_cdt(s, return_indices=True)),
        ("bf", lambda x: ndimage.distance_transform_bf(x, "taxicab", return_indices=True),
         lambda s: (lambda d, i: (d.view(np.int32), i))(*ndi.distance_transform_bf(s, "taxicab",
                                                                                   return_indices=True))),
    ]:
        distances, indices = call(batch)
        for b, volume in enumerate((far, full)):
            want_d, want_i = reference(volume)
            what = "one far background voxel" if b == 0 else "all foreground"
            _compare(f"{name} {what} distances", distances[b, 0].cpu().numpy(), want_d, failures,
                     exact=name != "edt")
            _compare(f"{name} {what} indices", indices[:, b, 0].cpu().numpy(), want_i, failures)
    import skimage.segmentation  # the bench extra, as thinning_parity's skimage.morphology

    corner = torch.from_numpy(np.stack([~far, ~full]).astype(np.int32))[:, None].to(device)  # one label; none
    for distance in (3.0, math.inf):
        got = segmentation.expand_labels(corner, distance).cpu().numpy()
        for b in range(2):
            _compare(f"expand_labels distance {distance} slice {b}", got[b, 0],
                     skimage.segmentation.expand_labels(corner[b, 0].cpu().numpy(), distance), failures)
    thinning_parity(device, 64 if dry_run else 512, failures)
    watershed_parity(device, 8 if dry_run else 256, failures)
    blobs = torch.from_numpy(_blobs((2, 1, side, side, side))).to(device)  # many rounds, slices converging apart
    got = morphology.skeletonize(blobs, method="parallel")
    _compare("skeletonize parallel blobs (CPU kernel)", got.cpu().numpy(),
             morphology.skeletonize(blobs.cpu(), method="parallel").numpy(), failures)
    from morphaug._ops import kernels

    # panoptic_confusion: a distinct id per voxel (the tables at their fullest, probes colliding) and one
    # instance over the whole slice (every run of every warp on one count), against the CPU kernel
    distinct = torch.randperm(side ** 3, device=device).view(1, 1, side, side, side) + 1
    for what, pred, ref in [("distinct ids", distinct, distinct.roll(1, -1)),
                            ("one instance", torch.ones_like(distinct), (distinct % 3 > 0).long())]:
        _compare(f"panoptic_confusion {what}", kernels.panoptic_confusion(pred, ref, 0.5).cpu().numpy(),
                 kernels.panoptic_confusion(pred.cpu(), ref.cpu(), 0.5).numpy(), failures)
    return dict(size=n, failures=failures)


def watershed_parity(device, slices, failures):
    """watershed_ift against SciPy: plateaus of 3 values (every path ties) and uint16 noise, markers of both
    signs, 2-D and 3-D, ``slices`` slices a call (a thread each)."""
    import scipy.ndimage as ndi

    torch = _torch()
    from morphaug import ndimage

    rng = np.random.default_rng(40)
    for shape, top, dtype, structure in [((48, 48), 2, np.uint8, None), ((48, 48), 2, np.uint8, np.ones((3, 3))),
                                         ((12, 13, 14), 65535, np.uint16, np.ones((3, 3, 3)))]:
        image = rng.integers(0, top + 1, (slices, 1) + shape).astype(dtype)
        markers = rng.choice(np.array([0] * 60 + [-2, -1, 1, 2, 3], np.int32), image.shape)
        got = ndimage.watershed_ift(torch.from_numpy(image).to(device), torch.from_numpy(markers).to(device),
                                    structure).cpu().numpy()
        for b in range(slices):
            _compare(f"watershed_ift {shape} {dtype.__name__} slice {b}", got[b, 0],
                     ndi.watershed_ift(image[b, 0], markers[b, 0], structure), failures)


def thinning_parity(device, side, failures):
    """skeletonize (zhang) and thin of 2-D blobs, a thick spiral and full / empty slices against scikit-image."""
    import skimage.morphology

    torch = _torch()
    from morphaug import morphology

    images = np.concatenate([_blobs((4, 1, side, side), seed=3, sigma=side / 32)[:, 0], ~spiral(side)[None],
                             np.ones((1, side, side), bool), np.zeros((1, side, side), bool)])
    batch = torch.from_numpy(images)[:, None].to(device)
    for name, got, reference in [
        ("skeletonize zhang", morphology.skeletonize(batch), skimage.morphology.skeletonize),
        ("thin", morphology.thin(batch), skimage.morphology.thin),
        ("thin max_num_iter=5", morphology.thin(batch, 5), lambda s: skimage.morphology.thin(s, max_num_iter=5)),
    ]:
        for b, image in enumerate(images):
            _compare(f"{name} slice {b}", got[b, 0].cpu().numpy(), reference(image), failures)


def edt_float64(dry_run):
    import scipy.ndimage as ndi

    torch = _torch()
    from morphaug import ndimage

    device = _device(dry_run)
    shape = (3, 1, 12, 11, 10) if dry_run else (4, 1, 96, 80, 72)
    failures = []
    for seed, sampling in enumerate([(1.0, 0.7, 2.3), (0.3, 1.0 / 3.0, 1.7), (2.0 ** 0.5, 1.0, 3.0 ** 0.5)]):
        mask = np.random.default_rng(seed).random(shape) < 0.97  # sparse background: many near-ties
        distances = torch.empty(shape, dtype=torch.float64, device=device)
        indices = torch.empty((3,) + shape, dtype=torch.int32, device=device)
        ndimage.distance_transform_edt(torch.from_numpy(mask).to(device), sampling=sampling, return_indices=True,
                                       distances=distances, indices=indices)
        for b in range(shape[0]):
            want_d, want_i = ndi.distance_transform_edt(mask[b, 0], sampling=sampling, return_indices=True)
            _compare(f"sampling {sampling} slice {b} distances", distances[b, 0].cpu().numpy(), want_d, failures)
            _compare(f"sampling {sampling} slice {b} indices", indices[:, b, 0].cpu().numpy(), want_i, failures)
    return dict(shape=shape, failures=failures)


def huge(dry_run):
    _needs_gpu(dry_run, "a batch of more than 2^31 voxels")
    import scipy.ndimage as ndi

    torch = _torch()
    from morphaug import ndimage

    shape = (520, 1, 160, 160, 160)  # 2.13e9 voxels: batch offsets past int32
    failures = []
    generator = torch.Generator(device="cuda").manual_seed(0)
    mask = torch.empty(shape, dtype=torch.bool, device="cuda")
    for b in range(0, shape[0], 64):
        mask[b:b + 64] = torch.rand((min(64, shape[0] - b),) + shape[1:], generator=generator, device="cuda") < 0.7
    checked = [0, shape[0] // 2, shape[0] - 1]
    labels, counts = ndimage.label(mask)
    for b in checked:
        want, count = ndi.label(mask[b, 0].cpu().numpy())
        _compare(f"label slice {b}", labels[b, 0].cpu().numpy(), want, failures)
    del labels, counts
    distances = ndimage.distance_transform_edt(mask)
    for b in checked:
        _compare(f"edt slice {b}", distances[b, 0].cpu().numpy(), ndi.distance_transform_edt(mask[b, 0].cpu().numpy()),
                 failures, exact=False)
    return dict(shape=shape, voxels=int(np.prod(shape)), slices=checked, failures=failures)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or ROOT / "gpu_check_report"))
    parser.add_argument("--dry-run", action="store_true", help="on the CPU through the emulator, small sizes")
    parser.add_argument("--stage", action="append", choices=STAGES, help="run only these stages")
    parser.add_argument("--tiny", action="store_true", help="one tiny call of every public function (sanitizer)")
    options = parser.parse_args(argv)
    if options.dry_run:
        os.environ["MORPHAUG_EMULATE_CUDA"] = "1"
    if options.tiny:
        tiny_calls(_device(options.dry_run))
        return 0
    report = Report(options.out, options.dry_run)
    stages = {"versions": (versions,), "tests": (tests, options.out), "sanitizer": (sanitizer, options.out),
              "sync_debug": (sync_debug,), "timings": (timings,), "peers": (peers,), "adversarial": (adversarial,),
              "edt_float64": (edt_float64,), "huge": (huge,)}
    for name in options.stage or STAGES:
        fn, *extra = stages[name]
        report.run(name, fn, options.dry_run, *extra)
    print(f"report: {options.out / 'gpu_check.md'}")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
