"""morphaug.metrics.surfel_distances against DeepMind's ``surface_distance`` (its functions called per slice),
and the derived neighbourhood-code table against DeepMind's."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from morphaug import ndimage
from morphaug.metrics import surfel_distances
from morphaug.metrics import _surfels

sd = pytest.importorskip("surface_distance")
from surface_distance import lookup_tables  # noqa: E402


@pytest.fixture(autouse=True)
def numpy_inf(monkeypatch):
    """surface_distance 0.1 spells infinity ``np.Inf``, which NumPy 2 removed."""
    monkeypatch.setattr(np, "Inf", np.inf, raising=False)


SPACINGS = {2: [(1.0, 1.0), (1.3, 0.7), (0.25, 2.0)], 3: [(1.0, 1.0, 1.0), (1.3, 0.7, 2.1), (0.5, 1.0, 3.0)]}


@pytest.mark.parametrize("rank", [2, 3])
def test_areas_match_deepmind_table(rank):
    table = (lookup_tables.create_table_neighbour_code_to_contour_length if rank == 2
             else lookup_tables.create_table_neighbour_code_to_surface_area)
    for spacing in SPACINGS[rank] + [tuple(np.random.default_rng(rank).uniform(0.1, 3, rank))]:
        np.testing.assert_allclose(_surfels._areas(spacing), table(spacing), rtol=1e-15, atol=0)


def _masks(rng, rank, batch=3, channels=2):
    """Random masks: noise, opened noise (smooth surfaces), single voxels, touching the border, empty
    and full slices, sizes across the 2**S cell and word boundaries."""
    shape = tuple(int(n) for n in rng.integers(1, 14 if rank == 3 else 40, rank))
    masks = []
    for _ in range(2):
        m = rng.random((batch, channels, *shape)) < rng.uniform(0.05, 0.7)
        if rng.random() < 0.5:
            m = ndi.binary_opening(m, np.ones((1, 1) + (2,) * rank))
        masks.append(m)
    pred, ref = masks
    pred[0, 0] = False  # pred empty
    ref[-1, -1] = False  # ref empty
    pred[-1, -1] = False  # both empty
    if batch > 1:
        ref[1, 0] = True  # full
    return pred, ref


def _same_lists(expected_d, expected_a, d, a):
    """DeepMind's sorted list equals ours to float64 ulps (distances or areas an ulp apart may sort the
    other way where they tie)."""
    np.testing.assert_allclose(expected_d, d, rtol=1e-14, atol=0)
    order = [np.lexsort((np.round(x, 9), np.round(y, 9))) for x, y in ((expected_a, expected_d), (a, d))]
    np.testing.assert_allclose(expected_a[order[0]], a[order[1]], rtol=1e-14, atol=0)


def _check(pred, ref, spacing, res):
    hd95, hd100, hd50 = res.robust_hausdorff(95), res.robust_hausdorff(100), res.robust_hausdorff(50)
    asd = res.average_surface_distance()
    overlap = res.surface_overlap_at_tolerance(1.5)
    dice = res.surface_dice_at_tolerance(1.0)
    for b in range(pred.shape[0]):
        for c in range(pred.shape[1]):
            expected = sd.compute_surface_distances(ref[b, c], pred[b, c], spacing)
            for row, (dk, ak) in enumerate([("distances_gt_to_pred", "surfel_areas_gt"),
                                            ("distances_pred_to_gt", "surfel_areas_pred")]):
                n = int(res.counts[row, b, c])
                _same_lists(expected[dk], expected[ak], res.distances[row, b, c, :n].numpy(),
                            res.areas[row, b, c, :n].numpy())
                assert np.all(res.areas[row, b, c, n:].numpy() == 0)
            for percent, ours in ((95, hd95), (100, hd100), (50, hd50)):
                np.testing.assert_allclose(sd.compute_robust_hausdorff(expected, percent), ours[b, c].item(),
                                           rtol=1e-14)
            with np.errstate(divide="ignore", invalid="ignore"):
                np.testing.assert_allclose(sd.compute_average_surface_distance(expected), asd[:, b, c].numpy(),
                                           rtol=1e-12)
                np.testing.assert_allclose(sd.compute_surface_overlap_at_tolerance(expected, 1.5),
                                           overlap[:, b, c].numpy(), rtol=1e-12)
                np.testing.assert_allclose(sd.compute_surface_dice_at_tolerance(expected, 1.0), dice[b, c].item(),
                                           rtol=1e-12)


@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("seed", range(6))
def test_matches_surface_distance(backend, rank, seed):
    rng = np.random.default_rng(seed + 10 * rank)
    pred, ref = _masks(rng, rank)
    spacing = SPACINGS[rank][seed % 3]
    before = pred.copy(), ref.copy()
    tp, tr = torch.from_numpy(pred), torch.from_numpy(ref)
    _check(pred, ref, spacing, surfel_distances(tp, tr.to(torch.uint8), spacing))
    np.testing.assert_array_equal(tp.numpy(), before[0])
    np.testing.assert_array_equal(tr.numpy(), before[1])


@pytest.mark.parametrize("rank", [2, 3])
def test_dense_lists_as_an_accelerator_holds_them(monkeypatch, rank):
    """The lists as every cell of each slice (no read back), as on an accelerator: the same metrics."""
    monkeypatch.setattr(_surfels, "_reads_are_free", lambda x: False)
    rng = np.random.default_rng(99 + rank)
    pred, ref = _masks(rng, rank)
    _check(pred, ref, SPACINGS[rank][1], surfel_distances(torch.from_numpy(pred), torch.from_numpy(ref),
                                                          SPACINGS[rank][1]))


def test_bad_arguments():
    x = torch.zeros(1, 1, 4, 4, 4, 4, dtype=torch.bool)
    with pytest.raises(ValueError, match="2-D or 3-D"):
        surfel_distances(x, x)
    y = torch.zeros(1, 1, 4, 4, dtype=torch.bool)
    with pytest.raises(ValueError, match="sampling"):
        surfel_distances(y, y, (1.0, -1.0))
    with pytest.raises(ValueError, match="binary"):
        surfel_distances(y.float() + 2, y)


def test_tables_are_what_the_script_derives():
    """``_surfel_tables`` is the output of scripts/surfel_tables.py (marching squares / cubes per code)."""
    pytest.importorskip("skimage")
    import importlib.util
    from pathlib import Path

    from morphaug.metrics._surfel_tables import NORMALS_2D, NORMALS_3D

    path = Path(__file__).resolve().parents[1] / "scripts" / "surfel_tables.py"
    spec = importlib.util.spec_from_file_location("surfel_tables", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert tuple(map(tuple, script.table(2))) == NORMALS_2D
    assert tuple(map(tuple, script.table(3))) == NORMALS_3D


@pytest.mark.parametrize("rank", [2, 3])
def test_unit_spacing_squares_rooted_at_the_listed_cells_are_scipy_s_distances(rank):
    """With unit spacing the CPU takes float32 squared distances (exact integers) and roots the listed
    cells' in float64, correctly rounded: SciPy's float64 EDT bit for bit, empty surfaces included; the
    lists equal the dense float64 path's, bit for bit."""
    rng = np.random.default_rng(7 + rank)
    surface = torch.from_numpy(rng.random((2, 3) + (23,) * rank) < 0.03)
    surface[1, 2] = False  # no surface: SciPy's distances to no cell
    squares, squared, found = _surfels._distances_to(surface, (1.0,) * rank)
    assert squared and squares.dtype == torch.float32 and found.tolist() == [[True] * 3, [True, True, False]]
    for b, c in np.ndindex(2, 3):
        expected = ndi.distance_transform_edt(~surface[b, c].numpy(), sampling=(1.0,) * rank)
        assert np.array_equal(np.sqrt(squares[b, c].double().numpy()), expected)
    assert not _surfels._distances_to(surface, (1.0,) * (rank - 1) + (2.0,))[1]  # other spacings: float64
    pred, ref = (torch.from_numpy(m) for m in _masks(rng, rank))
    squares_listed = surfel_distances(pred, ref)

    def float64_distances(surface, sampling):
        distances = torch.empty(surface.shape, dtype=torch.float64)
        ndimage.distance_transform_edt(~surface, sampling=sampling, distances=distances)
        return distances, False, surface.flatten(2).any(-1)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_surfels, "_distances_to", float64_distances)
        distances_listed = surfel_distances(pred, ref)
    for name in ("distances", "areas", "counts"):
        assert torch.equal(getattr(squares_listed, name), getattr(distances_listed, name))


def test_roots_are_correctly_rounded():
    """The listed squares' roots are SciPy's (math.sqrt's): torch's vectorised root is not, for 830
    integers below 2**16."""
    squares = torch.arange(2 ** 16, dtype=torch.float32)
    assert _surfels._roots(squares).tolist() == [math.sqrt(v) for v in range(2 ** 16)]
