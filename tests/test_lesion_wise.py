"""morphaug.metrics.lesion_wise_metrics against a transcription of the BraTS 2023 challenges' metrics.py
(github.com/rachitsaluja/BraTS-2023-Metrics: get_LesionWiseScores + get_LesionWiseResults) on cc3d,
SciPy and DeepMind's surface_distance, per slice."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from morphaug.metrics import BRATS_2023, lesion_wise_metrics

cc3d = pytest.importorskip("cc3d")
sd = pytest.importorskip("surface_distance")


@pytest.fixture(autouse=True)
def numpy_inf(monkeypatch):
    """surface_distance 0.1 spells infinity ``np.Inf``, which NumPy 2 removed."""
    monkeypatch.setattr(np, "Inf", np.inf, raising=False)


def _dice(a, b):
    return 2.0 * np.logical_and(a, b).sum() / (a.sum() + b.sum())


def brats_reference(pred, gt, spacing, dil_factor, thresh):
    """The challenge's scores of one volume and tissue, its loops kept (from arrays, not NIfTI files)."""
    sx, sy, sz = spacing
    pred, gt = pred.astype(np.int64), gt.astype(np.int64)
    both_empty = not gt.any() and not pred.any()
    full_dice = 1.0 if both_empty else _dice(pred, gt)
    full_hd95 = 0.0 if both_empty else sd.compute_robust_hausdorff(
        sd.compute_surface_distances(gt.astype(bool), pred.astype(bool), spacing), 95)
    iC, rC = pred.sum(), gt.sum()
    TP = np.where(pred == gt, 1, 0)[pred == 1].sum()
    TN = np.count_nonzero((pred != 1) & (gt != 1))
    sens = 1.0 * TP / (TP + rC - TP + sys.float_info.min)
    spec = 1.0 * TN / (TN + iC - TP + sys.float_info.min)
    if iC == 0 and rC == 0:
        sens = 1.0
    struct = ndi.generate_binary_structure(3, 2)
    pred_cc = cc3d.connected_components(pred, connectivity=26)
    gt_cc = cc3d.connected_components(gt, connectivity=26)
    gt_dil_cc = cc3d.connected_components(ndi.binary_dilation(gt, structure=struct, iterations=dil_factor),
                                          connectivity=26)
    combined = np.zeros_like(gt_dil_cc)
    for comp in range(1, np.max(gt_dil_cc) + 1):
        tmp = (gt_dil_cc == comp) * gt_cc
        np.place(tmp, tmp > 0, comp)
        combined += tmp
    tp, fn, gt_tp, pairs = [], [], [], []
    for comp in range(1, np.max(combined) + 1):
        gt_tmp = (combined == comp).astype(np.int64)
        gt_tmp_dil = ndi.binary_dilation(gt_tmp, structure=struct, iterations=dil_factor)
        gt_vol = np.sum(gt_tmp) * sx * sy * sz
        hits = np.unique(pred_cc * gt_tmp_dil)
        hits = hits[hits != 0]
        tp.extend(hits)
        pred_tmp = np.isin(pred_cc, hits).astype(np.int64)
        dice = _dice(pred_tmp, gt_tmp)
        hd = sd.compute_robust_hausdorff(sd.compute_surface_distances(gt_tmp.astype(bool), pred_tmp.astype(bool),
                                                                      spacing), 95)
        pairs.append((len(hits), gt_vol, dice, 374 if hd == np.inf else hd))
        (gt_tp if len(hits) else fn).append(comp)
    fp = np.unique(pred_cc[np.isin(pred_cc, tp + [0], invert=True)])
    kept = [p for p in pairs if p[1] > thresh]
    small_tp = sum(1 for p in pairs if p[0] and p[1] <= thresh)
    small_fn = sum(1 for p in pairs if not p[0] and p[1] <= thresh)
    n = len(kept) + len(fp)
    return {
        "dice": sum(p[2] for p in kept) / n if n else 1.0,
        "hd95": (sum(p[3] for p in kept) + len(fp) * 374) / n if n else 0.0,
        "num_tp": len(gt_tp) - small_tp, "num_fp": len(fp), "num_fn": len(fn) - small_fn,
        "legacy_dice": full_dice, "legacy_hd95": 374 if full_hd95 == np.inf else full_hd95,
        "sensitivity": sens, "specificity": spec, "gt_volume": np.sum(gt) * sx * sy * sz,
        "lesions": sorted((p[1], p[2], p[3], bool(p[0])) for p in pairs),
    }


def _blobs(rng, shape, count, radius):
    """``count`` random ellipsoids (some overlapping or near each other) in a volume of ``shape``."""
    grid = np.indices(shape).reshape(3, -1).T
    mask = np.zeros(int(np.prod(shape)), dtype=bool)
    for _ in range(count):
        centre = rng.uniform(0, shape)
        radii = rng.uniform(0.6, radius, 3)
        mask |= (((grid - centre) / radii) ** 2).sum(1) <= 1
    return mask.reshape(shape)


def _case(rng, shape):
    """A reference with several lesions and a prediction: the reference moved / grown / shrunk in
    part, with lesions missed and false ones added; specks of single voxels in both, which touch
    others by corners and edges only (26- against 6- or 18-connectivity)."""
    ref = _blobs(rng, shape, int(rng.integers(1, 7)), 3.5) | (rng.random(shape) < 0.004)
    pred = np.roll(ref, tuple(rng.integers(-1, 2, 3)), (0, 1, 2))
    if rng.random() < 0.5:
        pred = ndi.binary_dilation(pred) if rng.random() < 0.5 else ndi.binary_erosion(pred)
    pred &= ~_blobs(rng, shape, int(rng.integers(0, 3)), 4.0)  # missed lesions
    pred |= _blobs(rng, shape, int(rng.integers(0, 4)), 2.0) | (rng.random(shape) < 0.01)  # false lesions
    return pred, ref


def _batch(rng, batch=3, channels=2):
    shape = tuple(int(n) for n in rng.integers(10, 22, 3))
    cases = [[_case(rng, shape) for _ in range(channels)] for _ in range(batch)]
    pred = np.array([[c[0] for c in row] for row in cases])
    ref = np.array([[c[1] for c in row] for row in cases])
    pred[0, 0] = False  # false negatives only
    ref[-1, -1] = False  # false positives only
    if batch > 1:
        pred[1, -1] = ref[1, -1] = False  # empty
    return pred, ref


def _compare(result, pred, ref, spacing, dil, thresh):
    got = {name: getattr(result, name).numpy() for name in result._fields}
    for b in range(pred.shape[0]):
        for c in range(pred.shape[1]):
            expected = brats_reference(pred[b, c], ref[b, c], spacing, dil, thresh)
            for name in ("dice", "hd95", "legacy_dice", "legacy_hd95", "sensitivity", "specificity", "gt_volume"):
                np.testing.assert_allclose(got[name][b, c], expected[name], rtol=1e-12, err_msg=f"{name} {b} {c}")
            for name in ("num_tp", "num_fp", "num_fn"):
                assert got[name][b, c] == expected[name], (name, b, c)
            here = got["lesion_slice"] == b * pred.shape[1] + c
            lesions = sorted(zip(got["lesion_volume"][here], got["lesion_dice"][here], got["lesion_hd95"][here],
                                 got["lesion_matched"][here].tolist()))
            assert len(lesions) == len(expected["lesions"])
            for mine, theirs in zip(lesions, expected["lesions"]):
                np.testing.assert_allclose(mine[:3], theirs[:3], rtol=1e-12)
                assert mine[3] == theirs[3]


@pytest.mark.parametrize("seed", range(5))
def test_matches_brats_reference(backend, seed):
    rng = np.random.default_rng(seed)
    pred, ref = _batch(rng)
    dil, thresh = list(BRATS_2023.values())[seed % len(BRATS_2023)]
    spacing = [(1.0, 1.0, 1.0), (1.2, 0.8, 2.0), (0.9375, 0.9375, 3.0)][seed % 3]
    thresh = [thresh, 0, 10][seed % 3]  # thresholds that leave out some of these small lesions
    before = pred.copy(), ref.copy()
    tp, tr = torch.from_numpy(pred), torch.from_numpy(ref)
    result = lesion_wise_metrics(tp, tr.to(torch.uint8), spacing, dilation_factor=dil, volume_threshold=thresh)
    _compare(result, pred, ref, spacing, dil, thresh)
    np.testing.assert_array_equal(tp.numpy(), before[0])


def test_merged_lesions_and_shared_predictions():
    """Two lesions within the dilation are one lesion; one prediction touching two lesions counts for
    both; a prediction only near a lesion (inside its dilation) matches it."""
    ref = np.zeros((1, 2, 12, 24, 24), dtype=bool)
    ref[0, 0, 3:7, 3:7, 3:7] = True
    ref[0, 0, 3:7, 3:7, 9:13] = True  # 2 voxels apart: merged with dilation 3
    ref[0, 1, 3:7, 3:7, 3:7] = True
    ref[0, 1, 3:7, 3:7, 15:19] = True  # far apart: two lesions
    pred = np.zeros_like(ref)
    pred[0, :, 4:6, 4:6, 4:18] = True  # one prediction across both
    pred[0, 0, 9:11, 20:22, 20:22] = True  # a false one
    pred[0, 1, 3:5, 9:11, 3:5] = True  # 2 voxels beside the first lesion: matched
    for dil, thresh in ((3, 0), (1, 0), (3, 63)):
        result = lesion_wise_metrics(torch.from_numpy(pred), torch.from_numpy(ref), dilation_factor=dil,
                                     volume_threshold=thresh)
        _compare(result, pred, ref, (1.0, 1.0, 1.0), dil, thresh)
    result = lesion_wise_metrics(torch.from_numpy(pred), torch.from_numpy(ref), volume_threshold=0)
    assert result.num_tp.tolist() == [[1, 2]] and result.num_fp.tolist() == [[1, 0]]


def test_no_lesions_at_all():
    empty = torch.zeros(2, 1, 5, 6, 7, dtype=torch.bool)
    result = lesion_wise_metrics(empty, empty)
    assert result.dice.tolist() == [[1.0], [1.0]] and result.hd95.tolist() == [[0.0], [0.0]]
    assert result.lesion_dice.shape == (0,) and result.legacy_hd95.tolist() == [[0.0], [0.0]]


def test_bad_arguments():
    x = torch.zeros(1, 1, 4, 4, dtype=torch.bool)
    with pytest.raises(ValueError, match="3-D"):
        lesion_wise_metrics(x, x)
    y = torch.zeros(1, 1, 4, 4, 4, dtype=torch.bool)
    for kwargs in ({"dilation_factor": 0}, {"dilation_factor": 1.5}, {"volume_threshold": math.nan},
                   {"missing_hd95": "374"}):
        with pytest.raises(ValueError):
            lesion_wise_metrics(y, y, **kwargs)
