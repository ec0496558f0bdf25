"""The CPU kernels' helper threads (csrc/cpu/parallel.cpp): more threads than cores, concurrent
callers and forked children all give the single-threaded results, and nothing waits forever.

Skipped when ``morphaug._C`` is not built.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch
from conftest import assert_parity

from morphaug import _ops
from morphaug._ops import kernels as _native

NATIVE, WHY_NOT = _ops.load_native()
# Under `pytest -n 2 --dist loadgroup` the module runs on one worker: the serial results are
# computed once, and its threads never crowd both workers at once.
pytestmark = [pytest.mark.skipif(NATIVE is None, reason=WHY_NOT or ""), pytest.mark.xdist_group("test_cpu_threads")]

# Large enough for several chunks of every kernel below (a chunk is at least 2^18 voxel-operations).
SHAPE = (3, 1, 40, 48, 56)


def _inputs(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32))
    return x, x > 0.3


def _kernels(x: torch.Tensor, mask: torch.Tensor) -> list[torch.Tensor]:
    """A grey box erosion of ``x``, a labelling and an EDT of ``mask``, each on the helper threads."""
    return [_native.grey_box(x, [3, 5, 3], [0, 1, 0], ["reflect"] * 3, 0.0, False),
            _native.label(mask, np.ones((3, 3, 3), bool))[0],
            _native.edt(mask)[0]]


def _with_threads(threads: int, fn):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return fn()
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="module")
def serial() -> list[torch.Tensor]:
    return _with_threads(1, lambda: _kernels(*_inputs()))


def test_single_thread_reference_matches_scipy(serial):
    x = _inputs()[0].numpy()
    for b in range(SHAPE[0]):
        assert_parity(serial[0][b, 0].numpy(), ndi.grey_erosion(
            x[b, 0], size=(3, 5, 3), origin=(0, 1, 0), mode="reflect"), exact=True)
        expected, _ = ndi.label(x[b, 0] > 0.3, np.ones((3, 3, 3), bool))
        assert_parity(serial[1][b, 0].numpy(), expected, exact=True)


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_more_threads_than_cores_give_the_serial_results(serial, threads):
    for _ in range(3):
        got = _with_threads(threads, lambda: _kernels(*_inputs()))
        for g, s in zip(got, serial):
            torch.testing.assert_close(g, s, rtol=0, atol=0)


def test_fewer_threads_after_more_give_the_serial_results(serial):
    """Helpers made for 7 threads stay; a call at 2 threads takes only one of them."""
    _with_threads(7, lambda: _kernels(*_inputs()))
    got = _with_threads(2, lambda: _kernels(*_inputs()))
    for g, s in zip(got, serial):
        torch.testing.assert_close(g, s, rtol=0, atol=0)


def test_concurrent_callers_share_the_helpers(serial):
    results, errors = {}, []

    def call(name):
        try:
            results[name] = [_kernels(*_inputs()) for _ in range(4)]
        except Exception as error:  # reported below, from the main thread
            errors.append(error)

    def run():
        callers = [threading.Thread(target=call, args=(name,)) for name in range(3)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join(timeout=300)
        return [caller.is_alive() for caller in callers]

    assert not any(_with_threads(2, run)), "a caller never returned"
    assert not errors
    for runs in results.values():
        for got in runs:
            for g, s in zip(got, serial):
                torch.testing.assert_close(g, s, rtol=0, atol=0)


def _checksums(tensors) -> list[float]:
    return [float(t.numpy().astype(np.float64).sum()) for t in tensors]  # NumPy: no OpenMP region


def _checksums_in_child(queue, x, mask):
    # A forked child cannot open OpenMP regions (GNU OpenMP is not fork-safe: torch's own
    # parallel ops hang there, which is why DataLoader workers run one thread). The grey
    # and label kernels run on morphaug's helpers alone, which the child makes afresh.
    torch.set_num_threads(2)
    queue.put(_checksums(_kernels(x, mask)[:2]))


@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
def test_forked_child_makes_its_own_helpers(serial):
    x, mask = _inputs()
    _with_threads(2, lambda: _kernels(x, mask))  # the parent's helpers exist and sleep
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_checksums_in_child, args=(queue, x, mask))
    child.start()
    child.join(timeout=120)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child did not finish")
    assert child.exitcode == 0
    assert queue.get(timeout=10) == _checksums(serial[:2])
