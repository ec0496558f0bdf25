"""The component filter's and the component draw's CUDA launchers (csrc/cuda/components.cu) against
SciPy's labels and their rules.

The emulator runs them in every order of ``test_cuda_emulation.ORDERS``: ranks 1 to 4, face and
full connectivity, keep 0 to 3 and beyond the components a slice can hold, min_size, densities
from empty to full, slices across the 1-D tile (1024 voxels), the 32-wide tiles and the 256-voxel
chunks, several channels per sample (a voxel removed in any of them), ties of equal sizes (the
later component first), and one long component through every tile. The draw: draws of 0, 1,
negative ones and ranks in late chunks, size bounds that leave every component, some or none
eligible. The CPU kernels must agree.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from morphaug import _ops
from morphaug._ops import kernels as _native
from morphaug.ndimage import _components

# test_cuda_emulation takes this module's cases (emulation_cases): the emulator's helpers come from test_cuda_emu_grey
from test_cuda_emu_grey import EMULATOR, NATIVE, ORDERS, WHY_NO_EMULATOR, WHY_NO_NATIVE, emulated

pytestmark = [pytest.mark.skipif(NATIVE is None, reason=WHY_NO_NATIVE or "no native build"),
              pytest.mark.xdist_group("test_cuda_emulation")]
needs_emulator = pytest.mark.skipif(EMULATOR is None or not hasattr(torch.ops.morphaug_emu, "filter_components"),
                                    reason=WHY_NO_EMULATOR or "morphaug._C_emu has no filter_components kernel")


def reference(masks: np.ndarray, hops: int, keep: int, min_size: int) -> np.ndarray:
    """Per slice, SciPy's labels, the rule (the keep largest, the higher label first among equal
    sizes; fewer than min_size voxels), the removed voxels of any channel."""
    structure = ndi.generate_binary_structure(masks.ndim - 2, hops)
    out = np.zeros((masks.shape[0], 1, *masks.shape[2:]), bool)
    for b, c in np.ndindex(*masks.shape[:2]):
        labels, count = ndi.label(masks[b, c], structure)
        sizes = np.bincount(labels.ravel(), minlength=count + 1)
        gone = sizes < min_size
        if keep:
            order = sorted(range(1, count + 1), key=lambda label: (-sizes[label], -label))
            gone[order[keep:]] = True
        gone[0] = False
        out[b, 0] |= gone[labels]
    return out


def masks(shape, density: float, seed: int) -> np.ndarray:
    """Random masks; the first slice mirrored onto itself, so that components of equal sizes tie."""
    rng = np.random.default_rng(seed)
    x = rng.random(shape) < density
    first = x[(0,) * (len(shape) - 1)]
    first[len(first) // 2:] = first[:(len(first) + 1) // 2][::-1][:len(first) - len(first) // 2]
    return x


def snake(shape) -> np.ndarray:
    """One component threading every row but its last two columns (the rows joined at alternate
    ends), and single voxels in the last column every fourth row: the largest component's root is
    reached from most of it through many tiles."""
    x = np.zeros(shape, bool)
    rows = x.reshape(-1, shape[-1])
    rows[::2, :-2] = True
    rows[1::4, -3] = True
    rows[3::4, 0] = True
    rows[::4, -1] = True
    return x


# shape, density (None: the snake), hops, keep, min_size
CASES = {
    "1-D across the tile, keep 2": ((2, 3, 1100), 0.5, 1, 2, 0),
    "1-D min_size 3": ((3, 1, 300), 0.6, 1, 0, 3),
    "2-D faces, keep 1": ((2, 2, 37, 70), 0.45, 1, 1, 0),
    "2-D full, keep 3 and min_size 4": ((2, 3, 33, 65), 0.4, 2, 3, 4),
    "2-D sparse, keep 1": ((1, 4, 40, 40), 0.1, 2, 1, 0),
    "2-D full slice": ((2, 1, 20, 50), 1.0, 1, 1, 2000),
    "2-D empty": ((2, 2, 9, 9), 0.0, 1, 1, 1),
    "2-D keep beyond the components": ((1, 2, 3, 3), 0.5, 1, 5, 0),
    "2-D snake, keep 1": ((1, 2, 40, 45), None, 1, 1, 0),
    "3-D full, keep 1": ((2, 2, 9, 10, 37), 0.35, 3, 1, 0),
    "3-D faces, keep 2, min_size 2": ((1, 3, 6, 17, 33), 0.5, 1, 2, 2),
    "3-D edges, min_size 5": ((2, 1, 5, 5, 70), 0.3, 2, 0, 5),
    "4-D faces, keep 1": ((1, 2, 4, 5, 6, 7), 0.5, 1, 1, 0),
}


def case(name: str):
    """``(call(device), reference())`` as tests/test_cuda_emulation.py's CASES take them."""
    shape, density, hops, keep, min_size = CASES[name]
    x = snake(shape) if density is None else masks(shape, density, sum(map(ord, name)))
    mask = torch.from_numpy(x)
    return (lambda device: _native.filter_components(mask.to(device), hops, keep, min_size),
            lambda: [(reference(x, hops, keep, min_size), True)])


def pick_reference(masks: np.ndarray, hops: int, draw: np.ndarray, max_size: int) -> np.ndarray:
    """Per slice, SciPy's labels; of the n labels of fewer than max_size voxels (in label order), the
    one of rank min(floor(draw * n), n - 1), none for a negative draw: its voxels."""
    structure = ndi.generate_binary_structure(masks.ndim - 2, hops)
    out = np.zeros(masks.shape, bool)
    for b, c in np.ndindex(*masks.shape[:2]):
        labels, count = ndi.label(masks[b, c], structure)
        sizes = np.bincount(labels.ravel(), minlength=count + 1)
        eligible = [label for label in range(1, count + 1) if sizes[label] < max_size]
        if eligible and draw[b, c] >= 0:
            rank = min(int(np.floor(np.float64(draw[b, c]) * len(eligible))), len(eligible) - 1)
            out[b, c] = labels == eligible[rank]
    return out


# shape, density (None: the snake), hops, max_size; the draws: uniform, with a few set to 0, 1 and -1
PICK_CASES = {
    "1-D across the tile": ((2, 3, 1100), 0.5, 1, 5),
    "2-D faces": ((2, 2, 37, 70), 0.45, 1, 30),
    "2-D full, all eligible": ((3, 3, 33, 65), 0.4, 2, 10**6),
    "2-D none eligible": ((1, 3, 20, 20), 0.5, 1, 1),
    "2-D late chunks": ((1, 4, 64, 96), 0.05, 2, 4),
    "2-D full slice": ((2, 1, 20, 50), 1.0, 1, 2000),
    "2-D empty": ((2, 2, 9, 9), 0.0, 1, 100),
    "2-D snake": ((1, 2, 40, 45), None, 1, 10**6),
    "3-D full": ((2, 2, 9, 10, 37), 0.35, 3, 50),
    "3-D faces": ((1, 3, 6, 17, 33), 0.5, 1, 3),
    "4-D faces": ((1, 2, 4, 5, 6, 7), 0.5, 1, 20),
}


def pick_inputs(name: str):
    """The masks, draws, hops and max_size of PICK_CASES[name]."""
    shape, density, hops, max_size = PICK_CASES[name]
    seed = sum(map(ord, name))
    x = snake(shape) if density is None else masks(shape, density, seed)
    draw = np.random.default_rng(seed).random(shape[:2], dtype=np.float32)
    draw.flat[::5] = 0.0
    draw.flat[1::5] = 1.0
    draw.flat[2::7] = -1.0
    return x, draw, hops, max_size


def pick_case(name: str):
    x, draw, hops, max_size = pick_inputs(name)
    mask, draws = torch.from_numpy(x), torch.from_numpy(draw)
    return (lambda device: _native.pick_component(mask.to(device), hops, draws.to(device), max_size),
            lambda: [(pick_reference(x, hops, draw, max_size), True)])


def emulation_cases() -> dict:
    if NATIVE is None:
        return {}
    return {**{f"filter_components {name}": case(name) for name in CASES},
            **{f"pick_component {name}": pick_case(name) for name in PICK_CASES}}


@pytest.mark.parametrize("name", list(CASES))
def test_cpu_kernel_matches_scipy(name):
    call, expected = case(name)
    got = call("cpu")
    assert got.dtype == torch.bool and got.shape == (CASES[name][0][0], 1, *CASES[name][0][2:])
    assert np.array_equal(got.numpy(), expected()[0][0])


@needs_emulator
@pytest.mark.parametrize("name", list(emulation_cases()))
@pytest.mark.parametrize("order, seed", ORDERS)
def test_cuda_launchers_match_scipy(name, order, seed):
    call, expected = emulation_cases()[name]
    with emulated(order, seed):
        got = call("cpu")
    assert np.array_equal(got.numpy(), expected()[0][0])


@pytest.mark.parametrize("name", list(PICK_CASES))
def test_cpu_draw_matches_scipy(name):
    call, expected = pick_case(name)
    for threads in (1, 2, 5):  # 5: more than the slices of some cases, each labelling parallel
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            got = call("cpu")
        finally:
            torch.set_num_threads(before)
        assert got.dtype == torch.bool and got.shape == PICK_CASES[name][0]
        assert np.array_equal(got.numpy(), expected()[0][0])


@pytest.mark.parametrize("name", list(PICK_CASES))
def test_torch_draw_matches_scipy(name):
    x, draw, hops, max_size = pick_inputs(name)
    got = _components._pick_torch(torch.from_numpy(x), hops, torch.from_numpy(draw), max_size)
    assert np.array_equal(got.numpy(), pick_reference(x, hops, draw, max_size))


def launches(kernel: str) -> int:
    """How many times the emulator has run ``components.cu``'s ``kernel`` so far."""
    return EMULATOR.launch_counts().get(f"components.cu:{kernel}", (0,))[0]


@needs_emulator
def test_launches_per_kept_rank_and_none_beyond_the_components():
    x = torch.from_numpy(masks((2, 3, 20, 40), 0.5, 7))
    counts = {}
    for keep in (0, 1, 3, 400):  # 400: more than a 20 x 40 slice can hold (ceil(800 / 2))
        before = launches("rank_kernel")
        with emulated():
            _native.filter_components(x, 1, keep, 2)
        counts[keep] = launches("rank_kernel") - before
    assert counts == {0: 0, 1: 1, 3: 3, 400: 0}


@needs_emulator
def test_the_cuda_launcher_checks_and_keeps_its_input():
    x = torch.from_numpy(masks((1, 1, 6, 6), 0.5, 3))
    before = x.clone()
    with emulated():
        with pytest.raises(RuntimeError, match="keep and min_size must be >= 0"):
            _native.filter_components(x, 1, 0, -1)
        _native.filter_components(x, 1, 1, 0)
        out = _native.filter_components(torch.ones(2, 0, 5, dtype=torch.bool), 1, 1, 0)
    assert torch.equal(x, before)
    assert out.shape == (2, 1, 5) and not out.any()


@needs_emulator
def test_the_transforms_take_the_cuda_launcher(monkeypatch):
    """KeepLargestComponents under the emulator equals its torch backend on one-hot and index labels."""
    from morphaug.transforms import KeepLargestComponents, RemoveSmallComponents

    monkeypatch.setenv("MORPHAUG_BACKEND", "native")
    rng = np.random.default_rng(5)
    label = torch.from_numpy(rng.integers(0, 3, (2, 1, 16, 17, 18)))
    for transform in (KeepLargestComponents("label", num_components=2, num_classes=3),
                      RemoveSmallComponents("label", min_size=3, connectivity=1, num_classes=3)):
        before = launches("mark_kernel")
        with emulated("shuffle", 1):
            got = transform({"label": label})["label"]
        assert launches("mark_kernel") == before + 1
        monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
        assert torch.equal(got, transform({"label": label})["label"])
        monkeypatch.setenv("MORPHAUG_BACKEND", "native")
    assert _ops.use_native("filter_components", label > 0)


@needs_emulator
@pytest.mark.parametrize("onehot_labels", [False, True])
def test_remove_component_takes_the_cuda_draw(monkeypatch, onehot_labels):
    """RandRemoveComponent under the emulator (one pick_component call) equals its torch backend."""
    from morphaug.transforms import RandRemoveComponent

    monkeypatch.setenv("MORPHAUG_BACKEND", "native")
    rng = np.random.default_rng(6)
    label = torch.from_numpy(rng.integers(0, 4, (3, 1, 12, 13, 14)))
    if onehot_labels:
        label = torch.nn.functional.one_hot(label[:, 0], 4).movedim(-1, 1).to(torch.uint8)
    transform = RandRemoveComponent("label", prob=0.9, max_fraction=0.01, prob_other_class=0.5, num_classes=4,
                                    generator=torch.Generator().manual_seed(3))
    before = launches("pick_kernel")
    with emulated("shuffle", 2):
        got = transform({"label": label})["label"]
    assert launches("pick_kernel") == before + 1
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
    assert torch.equal(got, transform({"label": label}, params=transform.last_params)["label"])
    assert not torch.equal(got, label)
