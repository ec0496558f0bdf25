"""The CUDA launcher of ``watershed_ift`` (csrc/cuda/watershed_ift.cu: a thread per slice), run by
the emulator in every thread order, against the CPU kernel and SciPy, label for label: the random
cases of tests/test_watershed_native.py (ranks 1-4, random structures, uint8 / uint16 values with
many ties, every marker and output dtype, empty markers), more slices than a block has threads, and
one launch per call. ``emulation_cases`` feeds tests/test_cuda_emulation.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import assert_parity
from test_cuda_emu_grey import emulated
from test_watershed_native import kernel, random_case, scipy_slices

from morphaug import _ops

EMULATOR, WHY_NO_EMULATOR = _ops.load_emulation()
needs_emulator = pytest.mark.skipif(EMULATOR is None or not hasattr(torch.ops.morphaug_emu, "watershed_ift"),
                                    reason=WHY_NO_EMULATOR or "morphaug._C_emu has no watershed_ift")
CPU = _ops.built_for("watershed_ift", "cpu", emulate=False)
ORDERS = [("forward", 0), ("reverse", 0), ("shuffle", 1), ("shuffle", 2)]


def launches() -> int:
    return sum(v[0] for k, v in EMULATOR.launch_counts().items() if k.startswith("watershed_ift.cu:"))


def many_slices():
    """130 slices (three blocks of 64 threads), with plateaus and markers of both signs."""
    rng = np.random.default_rng(21)
    image = torch.from_numpy(rng.integers(0, 4, (13, 10, 9, 11))).to(torch.uint8)
    markers = torch.from_numpy(rng.choice([0] * 30 + [-1, 1, 2], image.shape)).to(torch.int16)
    markers[3] = 0
    return image, markers, np.ones((3, 3), bool), torch.int32


@needs_emulator
@pytest.mark.parametrize("order", ORDERS, ids=lambda o: f"{o[0]}{o[1]}")
def test_emulated_floods_match_the_cpu_kernel_and_scipy(order):
    calls = [random_case(200 + k, k % 4 + 1) for k in range(16)] + [many_slices()]
    for k, (image, markers, structure, dtype) in enumerate(calls):
        where = f"{order} case {k}: {tuple(image.shape)} {image.dtype} {markers.dtype} -> {dtype}"
        before = launches()
        with emulated(*order):
            got = kernel(image, markers, structure, dtype)
        assert launches() - before == 1, where
        assert_parity(got, scipy_slices(image, markers, structure, dtype), exact=True, dtype="expected",
                      where=where)
        if CPU:
            assert_parity(got, kernel(image, markers, structure, dtype), exact=True, where=where + " (CPU kernel)")


def emulation_cases() -> dict:
    """Cases of tests/test_cuda_emulation.py's table: ``(call(device), reference())``, exact results."""
    def case(image, markers, structure, dtype):
        expected = scipy_slices(image, markers, structure, dtype)
        def reference():
            return [(np.stack([np.stack([expected(b, c) for c in range(image.shape[1])])
                               for b in range(image.shape[0])]), True)]
        return (lambda device: kernel(image.to(device), markers.to(device), structure, dtype)), reference

    return {
        "watershed_ift 2-D, 130 slices": case(*many_slices()),
        "watershed_ift 3-D random": case(*random_case(7, 3)),
    }
