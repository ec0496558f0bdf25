"""``morphaug.metrics.panoptic_quality`` and MONAI's drop-ins for it against ``monai.metrics`` slice by slice."""

from __future__ import annotations

import pytest
import torch

from morphaug.metrics import panoptic_quality

SHAPES = [(8, 8), (5, 7, 6), (16, 13), (1, 9), (2, 2, 2)]
THRESHOLDS = [0.5, 0.3, 0.7, 0.1, 1.0, 0.45]


def _instances(shape, ids, generator, negative=False) -> torch.Tensor:
    """``(2, 3, *shape)`` instance maps: blocks of 2 voxels per side with noise, ids in [0, ids)."""
    low = -2 if negative else 0
    coarse = torch.randint(low, ids, (2, 3) + tuple((s + 1) // 2 for s in shape), generator=generator)
    for axis, side in enumerate(shape):
        coarse = coarse.repeat_interleave(2, dim=2 + axis).narrow(2 + axis, 0, side)
    noise = torch.rand(coarse.shape, generator=generator) < 0.2
    return torch.where(noise, torch.randint(low, ids, coarse.shape, generator=generator), coarse)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("threshold", THRESHOLDS)
@pytest.mark.parametrize("seed", range(3))
def test_matches_monai_slice_by_slice(shape, threshold, seed):
    monai_metrics = pytest.importorskip("monai.metrics")
    generator = torch.Generator().manual_seed(seed)
    ids = (2, 4, 12)[seed]
    pred = _instances(shape, ids, generator, negative=seed == 2)
    ref = _instances(shape, ids + 1, generator)
    before = pred.clone(), ref.clone()
    confusion = panoptic_quality(pred, ref, match_iou_threshold=threshold, output_confusion_matrix=True)
    assert confusion.shape == (2, 3, 4) and confusion.dtype == torch.float32
    for name in ("pq", "sq", "rq"):
        value = panoptic_quality(pred, ref, metric_name=name, match_iou_threshold=threshold)
        assert value.shape == (2, 3) and value.dtype == torch.float32
        for b in range(2):
            for c in range(3):
                want = monai_metrics.compute_panoptic_quality(pred[b, c], ref[b, c], metric_name=name,
                                                              match_iou_threshold=threshold)
                torch.testing.assert_close(value[b, c], want.float(), rtol=1e-6, atol=1e-7)
    for b in range(2):
        for c in range(3):
            want = monai_metrics.compute_panoptic_quality(pred[b, c], ref[b, c], match_iou_threshold=threshold,
                                                          output_confusion_matrix=True)
            torch.testing.assert_close(confusion[b, c], want.float(), rtol=1e-6, atol=1e-6)
    assert torch.equal(pred, before[0]) and torch.equal(ref, before[1])


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int16, torch.int32, torch.int64])
def test_integer_dtypes(dtype):
    generator = torch.Generator().manual_seed(4)
    pred, ref = _instances((9, 10), 2, generator), _instances((9, 10), 2, generator)
    want = panoptic_quality(pred, ref, output_confusion_matrix=True)
    assert torch.equal(panoptic_quality(pred.to(dtype), ref.to(dtype), output_confusion_matrix=True), want)


def test_empty_and_identical_slices():
    empty = torch.zeros(1, 2, 5, 5, dtype=torch.int64)
    full = torch.ones(1, 2, 5, 5, dtype=torch.int64)
    assert panoptic_quality(empty, empty, output_confusion_matrix=True).abs().sum() == 0
    assert torch.equal(panoptic_quality(full, empty, output_confusion_matrix=True)[0, 0], torch.tensor([0., 1, 0, 0]))
    assert torch.allclose(panoptic_quality(full, full), torch.ones(1, 2), atol=1e-5)


def test_monai_metric_class_matches_monai():
    monai_metrics = pytest.importorskip("monai.metrics")
    adapters = pytest.importorskip("morphaug.adapters.monai")
    generator = torch.Generator().manual_seed(5)
    for shape, threshold in [((3, 2, 12, 10), 0.5), ((2, 2, 6, 7, 5), 0.3)]:
        def sample():
            x = torch.zeros(shape)
            x[:, 0] = torch.randint(0, 6, (shape[0],) + shape[2:], generator=generator)
            x[:, 1] = torch.randint(0, 4, (shape[0],) + shape[2:], generator=generator)
            return x
        y_pred, y = sample(), sample()
        for names in ("pq", ("sq", "rq", "pq")):
            ours = adapters.PanopticQualityMetric(3, metric_name=names, match_iou_threshold=threshold)
            theirs = monai_metrics.PanopticQualityMetric(3, metric_name=names, match_iou_threshold=threshold)
            torch.testing.assert_close(ours(y_pred, y), theirs(y_pred, y))
            got, want = ours.aggregate(), theirs.aggregate()
            for a, b in zip(got if isinstance(got, list) else [got], want if isinstance(want, list) else [want]):
                torch.testing.assert_close(a, b)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"pred": torch.zeros(1, 1, 4, 4)}, TypeError, "pred must hold integer"),
    ({"ref": torch.zeros(1, 4, dtype=torch.int64)}, ValueError, "ref must have shape"),
    ({"pred": torch.zeros(1, 1, 4, 5, dtype=torch.int64)}, ValueError, "same shape"),
    ({"ref": [[0]]}, TypeError, "ref must be a torch.Tensor"),
    ({"metric_name": "dice"}, ValueError, "metric name"),
    ({"match_iou_threshold": 0.0}, ValueError, "match_iou_threshold"),
    ({"match_iou_threshold": 1.5}, ValueError, "match_iou_threshold"),
    ({"smooth_numerator": float("nan")}, ValueError, "smooth_numerator"),
])
def test_bad_arguments(kwargs, error, match):
    arguments = {"pred": torch.zeros(1, 1, 4, 4, dtype=torch.int64), "ref": torch.zeros(1, 1, 4, 4, dtype=torch.int64)}
    arguments.update(kwargs)
    with pytest.raises(error, match=match):
        panoptic_quality(arguments.pop("pred"), arguments.pop("ref"), **arguments)


def test_monai_function_messages():
    adapters = pytest.importorskip("morphaug.adapters.monai")
    with pytest.raises(ValueError, match="pred and gt should have same shapes"):
        adapters.compute_panoptic_quality(torch.zeros(3, 3), torch.zeros(3, 4))
    with pytest.raises(ValueError, match="only 2 channels"):
        adapters.PanopticQualityMetric(2)(torch.zeros(1, 3, 4, 4), torch.zeros(1, 3, 4, 4))
