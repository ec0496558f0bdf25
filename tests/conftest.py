"""Shared fixtures and the suite's one parity helper.

``assert_parity`` compares morphaug's results with a reference's (SciPy, scikit-image,
MONAI, POT): whole outputs, or every ``(b, c)`` slice against a per-slice reference.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from morphaug import _ops, _sync

# The cuda parameter carries the ``cuda`` mark, so ``pytest -m cuda`` (as in
# scripts/gpu_check.sh) runs every device-parametrised test on the GPU; it is
# skipped where no CUDA device exists.
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a CUDA device")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(params=DEVICES)
def device(request):
    """cpu, and cuda (skipped without a CUDA device)."""
    return torch.device(request.param)


#: ``make test``'s second run, on the pure-torch backend that an install without native kernels gets:
#: every test runs with ``MORPHAUG_BACKEND=torch`` but where it sets the policy itself, and the
#: ``backend`` fixture runs its torch case only.
TORCH_LEG = os.environ.get("MORPHAUG_BACKEND", "").strip().lower() == "torch"


@pytest.fixture
def native_policy(monkeypatch):
    """The automatic choice of backend for a test of the native kernels' own behaviour (their results
    against the torch loop's, the reads they spare), in the torch leg too."""
    monkeypatch.setenv("MORPHAUG_BACKEND", "auto")


@pytest.fixture(params=["torch", "auto", "emulated"], scope="module")
def backend(request):
    """Runs a module's tests on the pure-torch backend, on the automatic choice, then on the
    automatic choice with CUDA emulated.

    ``auto`` picks the native kernels wherever they are built (see
    ``morphaug.backend_info()``); ``emulated`` sends those calls on CPU tensors to the
    CUDA launchers, run by the emulator of ``morphaug._C_emu`` (skipped without it), with
    the choices a CUDA tensor would get. All three face the same parity tests. A module
    whose ops have no CUDA kernel sets ``NO_CUDA_KERNELS = True``: emulated, it would only
    repeat the torch backend.
    """
    if TORCH_LEG and request.param != "torch":
        pytest.skip("the torch leg of make test (MORPHAUG_BACKEND=torch): the native leg runs this backend")
    if request.param == "emulated" and getattr(request.module, "NO_CUDA_KERNELS", False):
        pytest.skip("no CUDA kernel: emulated CUDA runs the torch backend here")
    if request.param == "emulated" and _ops.load_emulation()[0] is None:
        pytest.skip(_ops.load_emulation()[1])
    settings = {"MORPHAUG_BACKEND": "torch" if request.param == "torch" else "auto",
                "MORPHAUG_EMULATE_CUDA": "1" if request.param == "emulated" else None}
    previous = {name: os.environ.get(name) for name in settings}
    for name, value in settings.items():
        _set_environment(name, value)
    yield request.param
    for name, value in previous.items():
        _set_environment(name, value)


def _set_environment(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


@pytest.fixture(scope="module")
def one_thread():
    """One intra-op thread for a module, restored afterwards: iterative solvers made
    of thousands of tiny ops are slowed 10x or more by spinning OpenMP threads on
    a shared CPU."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A tensor as NumPy; bfloat16/float16 go through float32 (SciPy has neither)."""
    tensor = tensor.detach().cpu()
    if tensor.dtype in (torch.bfloat16, torch.float16):
        tensor = tensor.float()
    return tensor.numpy()


def slice_element(element, b: int, c: int, n_axes: int):
    """The structuring element of slice (b, c): shared, (B, *k) or (B, C, *k)."""
    if element is None:
        return None
    array = element.detach().cpu().numpy() if isinstance(element, torch.Tensor) else np.asarray(element)
    extra = array.ndim - n_axes
    if extra == 0:
        return array
    if extra == 1:
        return array[b]
    return array[b, c]


def assert_parity(actual, expected, *, exact: bool, atol=1e-6, rtol=0.0, dtype=None, where: str = "") -> None:
    """The suite's one parity check: morphaug's ``actual`` against a reference's ``expected``.

    ``actual`` is a tensor, NumPy array or number, or a tuple/list/dict of them (distances and
    indices, a named tuple of metrics), compared leaf by leaf. ``expected`` has the same structure,
    or is a function ``expected(b, c)`` giving the reference of slice ``(b, c)``: every leaf of
    ``actual`` is then compared slice by slice on its two leading (batch, channel) axes. Shapes
    must match. ``exact``: equal elements; otherwise within ``atol + rtol * |expected|``. NaN
    matches NaN either way. ``dtype``: the dtype of every leaf of ``actual`` (torch or NumPy), or
    ``"expected"`` for the reference leaf's own. Tensors are compared on the host, float16 and
    bfloat16 through float32 (exactly representable there).
    """
    leaves, structure = torch.utils._pytree.tree_flatten(actual)
    if callable(expected):
        batch, channels = leaves[0].shape[:2]
        assert all(leaf.shape[:2] == (batch, channels) for leaf in leaves), f"{where}: (B, C) differ"
        for b, c in np.ndindex(batch, channels):
            assert_parity(torch.utils._pytree.tree_unflatten([leaf[b, c] for leaf in leaves], structure),
                          expected(b, c), exact=exact, atol=atol, rtol=rtol, dtype=dtype,
                          where=f"{where} slice (b={b}, c={c})".strip())
        return
    references = torch.utils._pytree.tree_leaves(expected) if isinstance(actual, (tuple, list, dict)) else [expected]
    assert len(leaves) == len(references), f"{where}: {len(leaves)} outputs != {len(references)}"
    for n, (ours, theirs) in enumerate(zip(leaves, references)):
        name = f"{where} output {n}".strip() if len(leaves) > 1 else where
        if dtype is not None:
            wanted = _dtype_name(theirs) if isinstance(dtype, str) and dtype == "expected" else _dtype_name(dtype)
            assert _dtype_name(ours) == wanted, f"{name}: dtype {_dtype_name(ours)} != {wanted}"
        ours, theirs = _host(ours), _host(theirs)
        assert ours.shape == theirs.shape, f"{name}: shape {ours.shape} != {theirs.shape}"
        if not exact:
            np.testing.assert_allclose(ours, theirs, atol=atol, rtol=rtol, equal_nan=True, err_msg=name)
        elif not np.array_equal(ours, theirs, equal_nan=ours.dtype.kind in "fc" and theirs.dtype.kind in "fc"):
            bad = np.argwhere((ours != theirs) & ~(_isnan(ours) & _isnan(theirs)))
            raise AssertionError(f"{name}: {len(bad)} elements differ, first at {bad[:5].tolist()}: "
                                 f"{ours[tuple(bad[0])]} != {theirs[tuple(bad[0])]}")


def each_slice(function, x: torch.Tensor, extra=None, **kwargs):
    """The reference ``expected(b, c)`` of :func:`assert_parity`: ``function(x[b, c], **kwargs)`` on
    NumPy, with ``extra(b, c)``'s keyword arguments added (per-sample elements, masks...)."""
    source = to_numpy(x)
    return lambda b, c: function(source[b, c], **kwargs, **(extra(b, c) if extra else {}))


def _host(value) -> np.ndarray:
    return to_numpy(value) if isinstance(value, torch.Tensor) else np.asarray(value)


def _isnan(array: np.ndarray) -> np.ndarray:
    return np.isnan(array) if array.dtype.kind in "fc" else np.zeros(array.shape, bool)


def _dtype_name(value) -> str:
    """``float32``, ``bfloat16``, ``bool``...: one name for a torch or NumPy dtype, or a value's."""
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    if isinstance(value, torch.Tensor):
        return _dtype_name(value.dtype)
    if isinstance(value, (np.dtype, type, str)):
        return np.dtype(value).name
    return np.asarray(value).dtype.name


def count_reads(monkeypatch) -> list[str]:
    """The documented host reads (``morphaug._sync``) made from now on, by reason."""
    reads = []
    real = _sync.host_read

    def counting(tensor, why):
        reads.append(why)
        return real(tensor, why)

    monkeypatch.setattr(_sync, "host_read", counting)
    return reads


class Dispatched(TorchDispatchMode):
    """The names of the ops dispatched while it is on (``morphaug::grey_box.out``,
    ``aten::copy_``, ...)."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.name())
        return func(*args, **(kwargs or {}))


def run_in_threads(work, arguments, switch_interval: float = 1e-6) -> None:
    """``work(argument)`` on one thread per argument at once, under a short switch interval (so the
    threads interleave at almost every bytecode), the interval restored afterwards."""
    import sys
    import threading

    interval = sys.getswitchinterval()
    sys.setswitchinterval(switch_interval)
    try:
        threads = [threading.Thread(target=work, args=(argument,)) for argument in arguments]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
