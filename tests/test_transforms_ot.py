"""Tests of the optimal-transport augmentations RandHistogramTransfer and RandWassersteinMix.

Correctness is checked against independent references: the exact 1-D OT map
between two samples' intensities (quantile matching, in NumPy) for the
histogram transfer; the closed-form geodesic between translated discs (a disc
at the weighted position, with the interpolated area) for the mix. Then the
common contract of the transforms (randomness, replay, identities, subclasses,
validation).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import assert_parity
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morphaug.transforms import RandHistogramTransfer, RandWassersteinMix
from morphaug.transforms._ot import draw_partners

SHAPE = (20, 24)


# The OT solvers run thousands of tiny ops: one intra-op thread (see conftest).
pytestmark = pytest.mark.usefixtures("one_thread")


# --------------------------------------------------------------------------- data
def images(device, batch=4, channels=2, shape=SHAPE, dtype=torch.float32, seed=0):
    """Per-sample intensity distributions that differ in range and shape."""
    g = torch.Generator().manual_seed(seed)
    x = torch.empty(batch, channels, *shape, dtype=torch.float64)
    for b in range(batch):
        kind = b % 4
        u = torch.rand(channels, *shape, generator=g, dtype=torch.float64)
        if kind == 0:
            x[b] = u
        elif kind == 1:
            x[b] = 10 + 3 * torch.randn(channels, *shape, generator=g, dtype=torch.float64)
        elif kind == 2:
            x[b] = 100 * u ** 2
        else:
            x[b] = -7 * torch.log1p(-u)
    return x.to(device=device, dtype=dtype)


def disc(shape, centre, radius):
    grids = np.indices(shape)
    return sum((g - c) ** 2 for g, c in zip(grids, centre)) <= radius ** 2


def labels(device, batch=4, shape=SHAPE, dtype=torch.uint8):
    """Index labels with classes 1 and 2 at different places per sample."""
    out = np.zeros((batch, 1, *shape), dtype=np.int64)
    for b in range(batch):
        out[b, 0][disc(shape, (6 + b, 5 + 3 * b), 3 + b % 2)] = 1
        out[b, 0][disc(shape, (14, 18 - 2 * b), 2 + b % 3)] = 2
    return torch.from_numpy(out).to(device=device, dtype=dtype)


def onehot(index, k):
    return torch.nn.functional.one_hot(index[:, 0].long(), k).movedim(-1, 1).to(index.dtype)


def exact_map(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The exact 1-D OT map between two equal-size empirical distributions: quantile matching."""
    order = np.argsort(source, kind="stable")
    out = np.empty_like(target)
    out[order] = np.sort(target)
    return out


def hist(**kw):
    return RandHistogramTransfer("image", **kw)


def mix(**kw):
    kw.setdefault("num_classes", 3)
    return RandWassersteinMix("image", "label", **kw)


# --------------------------------------------------------------------------- partners
def test_partners_are_a_random_derangement(device):
    generator = torch.Generator(device).manual_seed(0)
    seen = set()
    for _ in range(40):
        partner = draw_partners(3, generator, device)
        assert partner.device.type == device.type and partner.dtype == torch.int64
        assert sorted(partner.tolist()) == [0, 1, 2] and all(p != i for i, p in enumerate(partner.tolist()))
        seen.add(tuple(partner.tolist()))
    assert seen == {(1, 2, 0), (2, 0, 1)}  # both derangements of 3 samples occur
    assert draw_partners(1, generator, device).tolist() == [0]
    big = draw_partners(64, generator, device).cpu()
    assert torch.equal(big.sort().values, torch.arange(64)) and bool((big != torch.arange(64)).all())


# --------------------------------------------------------------------------- histogram transfer: correctness
def test_histogram_transfer_matches_exact_quantile_map(device):
    x = images(device, shape=(48, 48), dtype=torch.float64)
    t = hist(strength=1.0, prob=1.0, bins=96, reg=2e-3, tol=1e-4, generator=torch.Generator().manual_seed(3))
    y = t(x).cpu().numpy()
    partner = t.last_params["partner"].cpu().numpy()
    xs = x.cpu().numpy()
    for b in range(x.shape[0]):
        for c in range(x.shape[1]):
            source, target = xs[b, c].ravel(), xs[partner[b], c].ravel()
            scale = target.max() - target.min()
            reference = exact_map(source, target)
            error = np.abs(y[b, c].ravel() - reference) / scale
            before = np.abs(source - reference) / scale
            assert np.median(error) < 0.01 and np.quantile(error, 0.95) < 0.035, (b, c)
            assert np.median(before) > 0.05  # the transfer did the work
            q = np.linspace(0.02, 0.98, 25)
            assert_parity(np.quantile(y[b, c], q), np.quantile(target, q), exact=False, rtol=1e-7, atol=0.04 * scale)
            # monotone: the order of the intensities is kept
            order = np.argsort(source, kind="stable")
            assert (np.diff(y[b, c].ravel()[order]) >= -1e-9 * scale).all()


def test_histogram_transfer_strength_interpolates(device):
    x = images(device)
    t = hist(strength=1.0, prob=1.0, generator=torch.Generator().manual_seed(0))
    full = t(x)
    params = dict(t.last_params, strength=torch.full((4,), 0.3, device=device))
    partial = t(x, params=params)
    torch.testing.assert_close(partial, 0.7 * x + 0.3 * full, rtol=1e-5, atol=1e-5)
    params["strength"] = torch.tensor([0.0, 0.3, 0.0, 1.0], device=device)
    mixed = t(x, params=params)
    assert torch.equal(mixed[0], x[0]) and torch.equal(mixed[2], x[2]) and torch.equal(mixed[3], full[3])


def test_histogram_transfer_per_channel_ranges(device):
    x = images(device, batch=2)
    x[1, 0] = x[1, 0] * 1000 - 5000  # very different ranges per channel
    t = hist(strength=1.0, prob=1.0)
    y = t(x)
    for b, p in enumerate(t.last_params["partner"].tolist()):
        for c in range(2):
            lo, hi = x[p, c].min(), x[p, c].max()
            assert lo - 1e-3 * (hi - lo) <= y[b, c].min() and y[b, c].max() <= hi + 1e-3 * (hi - lo)
            assert abs(float(y[b, c].median() - x[p, c].median())) < 0.05 * float(hi - lo)


def test_histogram_transfer_flat_images_give_no_nan(device):
    x = images(device, batch=3)
    x[0] = 3.0  # flat sample
    x[1, 1] = -2.0  # one flat channel
    t = hist(strength=1.0, prob=1.0)
    params = {"apply": torch.ones(3, dtype=torch.bool, device=device),
              "partner": torch.tensor([2, 0, 1], device=device), "strength": torch.ones(3, device=device)}
    y = t(x, params=params)
    assert torch.isfinite(y).all()
    # a flat source becomes its partner's mean (up to half a bin of the partner's range)
    for c in range(2):
        span = x[2, c].max() - x[2, c].min()
        assert torch.allclose(y[0, c], x[2, c].mean().expand_as(y[0, c]), atol=float(span) / 64)
    # everything moved toward a flat channel becomes its value
    assert torch.equal(y[1], torch.full_like(y[1], 3.0))
    assert torch.equal(y[2, 1], torch.full_like(y[2, 1], -2.0))
    both_flat = torch.stack([torch.full((1, 6, 6), 1.0), torch.full((1, 6, 6), 5.0)]).to(device)
    out = hist(strength=1.0, prob=1.0)(both_flat)
    assert torch.equal(out, both_flat.flip(0))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.float16, torch.float64])
def test_histogram_transfer_dtypes(device, dtype):
    x = images(device, dtype=torch.float32)
    x = (x - x.amin((1, 2, 3), keepdim=True)) / (x.amax((1, 2, 3), keepdim=True) - x.amin((1, 2, 3), keepdim=True))
    x = (x * (200 if dtype in (torch.uint8, torch.int16) else 1)).to(dtype)
    t = hist(strength=1.0, prob=1.0, generator=torch.Generator().manual_seed(0))
    y = t(x)
    assert y.dtype == dtype and y.shape == x.shape and torch.isfinite(y.float()).all()
    reference = t(x.double(), params=t.last_params)
    atol = 0.51 if not dtype.is_floating_point else (0.01 if dtype == torch.float16 else 1e-9)
    torch.testing.assert_close(y.double(), reference, rtol=0, atol=atol)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), batch=st.integers(1, 4), channels=st.integers(1, 2),
       shape=st.sampled_from([(5, 7), (9, 4, 3), (12, 12)]), low=st.floats(0.0, 1.0),
       bins=st.sampled_from([2, 7, 64]))
def test_histogram_transfer_property(seed, batch, channels, shape, low, bins):
    """Finite, inside the hull of the sample's and its partner's ranges, order kept per channel."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, channels, *shape, generator=g) * torch.rand(batch, channels, *[1] * len(shape),
                                                                        generator=g) * 50
    x[..., 0] = torch.where(torch.rand(batch, channels, *shape[:-1], generator=g) < 0.3, 0.0, x[..., 0])  # ties
    t = hist(strength=(low, 1.0), prob=0.7, bins=bins, generator=g)
    y = t(x)
    assert torch.isfinite(y).all()
    partner = t.last_params["partner"]
    flat_x, flat_y = x.flatten(2), y.flatten(2)
    lo = torch.minimum(flat_x.amin(-1), flat_x[partner].amin(-1))
    hi = torch.maximum(flat_x.amax(-1), flat_x[partner].amax(-1))
    slack = 1e-4 * (hi - lo) + 1e-5
    assert bool((flat_y.amin(-1) >= lo - slack).all() and (flat_y.amax(-1) <= hi + slack).all())
    order = flat_x.argsort(-1)
    ordered = flat_y.gather(-1, order)
    assert bool((ordered.diff(dim=-1) >= -1e-4 * (hi - lo)[..., None] - 1e-5).all())
    skipped = ~t.last_params["apply"] | (partner == torch.arange(batch))
    assert torch.equal(y[skipped], x[skipped])


# --------------------------------------------------------------------------- Wasserstein mix: correctness
@pytest.mark.parametrize("w", [0.25, 0.5, 0.8])
def test_mix_of_translated_discs_is_a_disc_in_between(device, w):
    shape = (32, 40)
    discs = [disc(shape, (16, 10), 5), disc(shape, (14, 30), 5)]
    label = torch.from_numpy(np.stack(discs)[:, None].astype(np.int64)).to(device)
    image = torch.rand(2, 1, *shape, device=device)
    t = mix(weight=w, prob=1.0, num_classes=2)
    out = t({"image": image, "label": label})
    assert t.last_params["partner"].tolist() == [1, 0]
    for b, (start, end) in enumerate([((16, 10), (14, 30)), ((14, 30), (16, 10))]):
        result = out["label"][b, 0].cpu().numpy().astype(bool)
        expected_centre = [(1 - w) * s + w * e for s, e in zip(start, end)]
        assert result.sum() == discs[0].sum()  # same area (both discs have it)
        centre = np.argwhere(result).mean(0)
        assert_parity(centre, expected_centre, exact=False, rtol=1e-7, atol=0.5)
        ideal = disc(shape, expected_centre, 5)
        assert (result & ideal).sum() / (result | ideal).sum() > 0.8
    # images: linear mix with the same weight
    torch.testing.assert_close(out["image"], (1 - w) * image + w * image.flip(0))


@pytest.mark.parametrize("reg", [2e-3, 0.02])
def test_mix_stays_on_the_fast_kernel_path(monkeypatch, reg):
    """The default reg (float64) and reg >= 0.02 (float32) never reach the slow exact log-domain path."""
    import morphaug.ot._grid as grid

    def slow_path(*args, **kwargs):
        raise AssertionError("wasserstein_barycenter took its exact log-domain path")

    monkeypatch.setattr(grid, "_exact_axis", slow_path)
    for shape in [(32, 32), (9, 40), (8, 7, 9)]:
        data = {"image": torch.rand(2, 1, *shape), "label": torch.randint(0, 3, (2, 1, *shape))}
        mix(reg=reg, prob=1.0)(data)
    assert mix().reg == 2e-3


def test_mix_interpolates_the_volume(device):
    shape = (30, 30)
    label = torch.from_numpy(np.stack([disc(shape, (15, 8), 3), disc(shape, (15, 21), 6)])[:, None]
                             .astype(np.uint8)).to(device)
    t = mix(weight=0.4, prob=1.0, num_classes=2)
    out = t({"image": torch.rand(2, 1, *shape, device=device), "label": label})["label"]
    small, large = int(label[0].sum()), int(label[1].sum())
    assert int(out[0].sum()) == round(0.6 * small + 0.4 * large)
    assert int(out[1].sum()) == round(0.6 * large + 0.4 * small)
    centre = np.argwhere(out[0, 0].cpu().numpy()).mean(0)
    assert_parity(centre, [15, 0.6 * 8 + 0.4 * 21], exact=False, rtol=1e-7, atol=0.6)


def test_mix_with_itself_is_itself(device):
    data = {"image": images(device), "label": labels(device)}
    t = mix(weight=(0.3, 0.7), prob=1.0)
    params = {"apply": torch.ones(4, dtype=torch.bool, device=device), "partner": torch.arange(4, device=device),
              "weight": torch.full((4,), 0.5, device=device)}
    out = t(data, params=params)
    assert torch.equal(out["label"], data["label"]) and torch.equal(out["image"], data["image"])
    single = {k: v[:1] for k, v in data.items()}
    out = t(single)
    assert t.last_params["partner"].tolist() == [0]
    assert torch.equal(out["label"], single["label"]) and torch.equal(out["image"], single["image"])
    # two identical samples paired together: the geodesic is constant
    twins = {k: v[:1].expand(2, *v.shape[1:]).clone() for k, v in data.items()}
    out = t(twins)
    assert torch.equal(out["label"], twins["label"])


def test_mix_endpoints_are_exact(device):
    data = {"image": images(device), "label": labels(device)}
    t = mix(prob=1.0, generator=torch.Generator().manual_seed(0))
    t(data)
    partner = t.last_params["partner"]
    params = dict(t.last_params, weight=torch.tensor([0.0, 1.0, 0.0, 1.0], device=device))
    out = t(data, params=params)
    for b in range(4):
        source = b if b % 2 == 0 else int(partner[b])
        assert torch.equal(out["label"][b], data["label"][source])
        assert torch.equal(out["image"][b], data["image"][source])


def test_mix_class_present_on_one_side_shrinks_in_place(device):
    shape = (24, 24)
    label = np.zeros((2, 1, *shape), np.int64)
    label[0, 0][disc(shape, (7, 7), 4)] = 1
    label[0, 0][disc(shape, (17, 17), 4)] = 2  # class 2 only in sample 0
    label[1, 0][disc(shape, (7, 15), 4)] = 1
    label = torch.from_numpy(label).to(device)
    t = mix(weight=0.5, prob=1.0)
    out = t({"image": torch.rand(2, 1, *shape, device=device), "label": label})["label"].cpu().numpy()
    area = int((label[0] == 2).sum())
    assert (out[0] == 2).sum() == round(0.5 * area) and (out[1] == 2).sum() == round(0.5 * area)
    assert ((out[0] == 2) <= (label[0].cpu().numpy() == 2)).all()  # inside its own mask
    assert ((out[1] == 2) <= (label[0].cpu().numpy() == 2)).all()


def test_mix_index_and_onehot_agree_and_stay_valid(device):
    index = labels(device)
    image = images(device)
    t = mix(prob=1.0, generator=torch.Generator().manual_seed(2))
    out_index = t({"image": image, "label": index})["label"]
    params = t.last_params
    hot = onehot(index, 3).float()
    out_hot = mix(prob=1.0, label_format="onehot")({"image": image, "label": hot}, params=params)["label"]
    assert out_hot.dtype == torch.float32 and out_hot.shape == hot.shape
    assert torch.equal(out_hot.sum(1), torch.ones_like(out_hot[:, 0]))
    assert torch.equal(out_hot.argmax(1, keepdim=True).to(index.dtype), out_index)
    assert set(out_index.unique().tolist()) <= {0, 1, 2}
    assert all(not torch.equal(out_index[b], index[b]) for b in range(4))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int64, torch.float32, torch.bool])
def test_mix_label_dtypes(device, dtype):
    index = labels(device, dtype=torch.int64)
    num_classes = 3
    if dtype == torch.bool:
        index, num_classes = index == 1, 2
    index = index.to(dtype)
    t = mix(prob=1.0, num_classes=num_classes, generator=torch.Generator().manual_seed(0))
    out = t({"image": images(device, dtype=torch.float16), "label": index})
    assert out["label"].dtype == dtype and out["label"].shape == index.shape
    assert set(out["label"].unique().tolist()) <= set(range(num_classes))
    assert out["image"].dtype == torch.float16


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), batch=st.integers(1, 3), num_classes=st.integers(2, 4),
       shape=st.sampled_from([(9, 11), (6, 5, 7)]))
def test_mix_property(seed, batch, num_classes, shape):
    """Valid labels; an exact class volume wherever no other class competes for a voxel."""
    g = torch.Generator().manual_seed(seed)
    index = torch.randint(0, num_classes, (batch, 1, *shape), generator=g)
    t = mix(prob=0.8, num_classes=num_classes, generator=g)
    out = t({"image": torch.rand(batch, 1, *shape, generator=g), "label": index})["label"]
    assert out.dtype == index.dtype and out.shape == index.shape
    assert bool(((out >= 0) & (out < num_classes)).all())
    skipped = ~t.last_params["apply"] | (t.last_params["partner"] == torch.arange(batch))
    assert torch.equal(out[skipped], index[skipped])
    counts = torch.stack([(out == k).flatten(1).sum(-1) for k in range(1, num_classes)], -1)
    before = torch.stack([(index == k).flatten(1).sum(-1) for k in range(1, num_classes)], -1)
    w = t.last_params["weight"][:, None]
    expected = torch.lerp(before.float(), before[t.last_params["partner"]].float(), w).round()
    assert bool((counts <= torch.where(skipped[:, None], before.float(), expected)).all())  # claims may collide


# --------------------------------------------------------------------------- common contract
CASES = {
    "RandHistogramTransfer": (lambda **kw: hist(**kw), "image"),
    "RandWassersteinMix": (lambda **kw: mix(**kw), "label"),
}


def make_data(device, batch=4):
    return {"image": images(device, batch), "label": labels(device, batch), "name": ["a"] * batch}


@pytest.mark.parametrize("name", list(CASES))
def test_same_seed_same_output(name, device):
    factory, key = CASES[name]
    data = make_data(device)
    a = factory(prob=0.5, generator=torch.Generator().manual_seed(7))(data)
    b = factory(prob=0.5, generator=torch.Generator().manual_seed(7))(data)
    assert torch.equal(a["image"], b["image"]) and torch.equal(a["label"], b["label"])
    transform = factory(prob=0.5)
    torch.manual_seed(3)
    c = transform(data)
    params = transform.last_params
    assert all(v.device.type == device.type for v in params.values())
    torch.manual_seed(3)
    d = transform(data)
    assert torch.equal(c["image"], d["image"]) and torch.equal(c["label"], d["label"])
    torch.manual_seed(4)
    transform(data)
    assert any(not torch.equal(params[k], transform.last_params[k]) for k in params)


@pytest.mark.parametrize("name", list(CASES))
def test_samples_get_different_draws(name, device):
    factory, _ = CASES[name]
    transform = factory(prob=1.0, generator=torch.Generator().manual_seed(0))
    transform(make_data(device, batch=6))
    params = transform.last_params
    amount = params["strength" if name == "RandHistogramTransfer" else "weight"]
    assert amount.unique().numel() == 6
    assert params["partner"].unique().numel() == 6


@pytest.mark.parametrize("name", list(CASES))
def test_prob_zero_is_identity_and_prob_one_always_applies(name, device):
    factory, key = CASES[name]
    data = make_data(device)
    transform = factory(prob=0.0)
    out = transform(data)
    assert not transform.last_params["apply"].any()
    assert torch.equal(out["image"], data["image"]) and torch.equal(out["label"], data["label"])
    transform = factory(prob=1.0, generator=torch.Generator().manual_seed(1))
    for _ in range(3):
        out = transform(data)
        assert transform.last_params["apply"].all()
        assert all(not torch.equal(out[key][b], data[key][b]) for b in range(4))


@pytest.mark.parametrize("name, amount", [("RandHistogramTransfer", "strength"), ("RandWassersteinMix", "weight")])
def test_zero_amount_is_identity(name, amount, device):
    factory, _ = CASES[name]
    data = make_data(device)
    out = factory(prob=1.0, **{amount: 0.0})(data)
    assert torch.equal(out["image"], data["image"]) and torch.equal(out["label"], data["label"])


def test_keys_map_to_roles(device):
    data = make_data(device)
    data["image2"], data["label2"] = data["image"].clone(), data["label"].clone()
    transform = RandHistogramTransfer({"image": "image", "label": "label", "image2": "image"}, prob=1.0)
    out = transform(data)
    assert transform.changed_keys == ("image", "image2")
    assert out["label"] is data["label"] and torch.equal(out["image"], out["image2"])  # labels left alone
    # keys mapped to roles are keys and label_keys; all keys of a sample get one draw
    roles = {"label": "label", "image": "image", "label2": "label", "image2": "image"}
    transform = RandWassersteinMix(roles, prob=1.0, num_classes=3)
    out = transform(data)
    expected = mix()(data, params=transform.last_params)
    for key in ("image", "label"):
        assert torch.equal(out[key], expected[key]) and torch.equal(out[f"{key}2"], expected[key])
    assert transform.image_keys == ("image", "image2") and transform.label_keys == ("label", "label2")
    assert repr(transform).startswith("RandWassersteinMix(keys=('image', 'image2'), label_keys=('label', 'label2'), ")
    assert repr(RandWassersteinMix("image")).startswith("RandWassersteinMix(keys=('image',), label_keys=None, ")
    assert repr(RandWassersteinMix({"l": "label"})).startswith("RandWassersteinMix(keys={'l': 'label'}, weight=")


@pytest.mark.parametrize("name", list(CASES))
def test_input_untouched(name, device):
    factory, _ = CASES[name]
    data = make_data(device)
    before = {k: v.clone() for k, v in data.items() if isinstance(v, torch.Tensor)}
    versions = {k: v._version for k, v in data.items() if isinstance(v, torch.Tensor)}
    out = factory(prob=1.0)(data)
    for k, v in before.items():
        assert torch.equal(data[k], v) and data[k]._version == versions[k]
    assert out is not data and out["name"] is data["name"]


@pytest.mark.parametrize("name", list(CASES))
def test_replay_params(name, device):
    factory, key = CASES[name]
    data = make_data(device)
    transform = factory()
    first = transform(data)
    again = factory()(data, params=transform.last_params)
    assert torch.equal(first["image"], again["image"]) and torch.equal(first["label"], again["label"])


@pytest.mark.parametrize("name", list(CASES))
def test_subclasses_keep_type_and_metadata(name):
    monai_data = pytest.importorskip("monai.data")
    tv_tensors = pytest.importorskip("torchvision.tv_tensors")
    factory, key = CASES[name]
    data = make_data("cpu")
    affine = torch.diag(torch.tensor([0.5, 0.7, 1.0], dtype=torch.float64))
    wrapped = {k: monai_data.MetaTensor(data[k], affine=affine, meta={"filename": f"{k}.nii.gz"})
               for k in ("image", "label")}
    out = factory(prob=1.0)({**data, **wrapped})
    for k in ("image", "label") if name == "RandWassersteinMix" else ("image",):
        assert type(out[k]) is monai_data.MetaTensor
        assert torch.equal(out[k].affine, affine) and out[k].meta["filename"] == f"{k}.nii.gz"
        assert out[k].meta is not wrapped[k].meta
    out = factory(prob=1.0)({"image": tv_tensors.Image(data["image"]), "label": tv_tensors.Mask(data["label"])})
    assert type(out["image"]) is tv_tensors.Image and type(out["label"]) is tv_tensors.Mask
    assert type(factory(prob=1.0)(tv_tensors.Image(data["image"]))) is tv_tensors.Image


def test_missing_keys_tensor_input_and_repr():
    data = make_data("cpu")
    with pytest.raises(KeyError, match="'label'"):
        mix()({"image": data["image"]})
    out = mix(prob=1.0, allow_missing_keys=True)({"label": data["label"]})
    assert set(out) == {"label"} and not torch.equal(out["label"], data["label"])
    assert mix(allow_missing_keys=True)({"name": 1}) == {"name": 1}
    image = mix(prob=1.0, weight=0.5, generator=torch.Generator().manual_seed(0))  # a bare tensor is an image
    out = image(data["image"])
    partner = image.last_params["partner"]
    torch.testing.assert_close(out, 0.5 * data["image"] + 0.5 * data["image"][partner])
    text = repr(mix(weight=0.3))
    assert text.startswith("RandWassersteinMix(keys=('image',), label_keys=('label',), weight=(0.3, 0.3)")
    assert "bins=64" in repr(hist()) and "strength=(0.0, 1.0)" in repr(hist())


BAD_ARGUMENTS = [
    (lambda: hist(strength=1.5), ValueError, r"strength must lie in \[0, 1\]"),
    (lambda: hist(strength=(-0.1, 0.5)), ValueError, ">= 0"),
    (lambda: hist(strength=(0.8, 0.2)), ValueError, "low must not exceed high"),
    (lambda: hist(strength="a"), TypeError, "strength"),
    (lambda: hist(bins=1), ValueError, "bins must be >= 2"),
    (lambda: hist(bins=16.0), TypeError, "bins must be an int"),
    (lambda: hist(bins=True), TypeError, "bins must be an int"),
    (lambda: hist(reg=0.0), ValueError, "reg must be positive"),
    (lambda: hist(reg=float("inf")), ValueError, "reg must be positive"),
    (lambda: hist(reg="small"), TypeError, "reg must be a real number"),
    (lambda: hist(max_iter=0), ValueError, "max_iter must be >= 1"),
    (lambda: hist(tol=-1.0), ValueError, "tol must be a finite number"),
    (lambda: hist(prob=1.5), ValueError, "prob must be a probability"),
    (lambda: RandHistogramTransfer(()), ValueError, "keys must name"),
    (lambda: hist(generator=1), TypeError, "generator"),
    (lambda: mix(weight=1.2), ValueError, r"weight must lie in \[0, 1\]"),
    (lambda: mix(weight=(0.5, 0.1)), ValueError, "low must not exceed high"),
    (lambda: mix(reg=-1.0), ValueError, "reg must be positive"),
    (lambda: mix(max_iter=2.5), TypeError, "max_iter must be an int"),
    (lambda: mix(num_classes=1), ValueError, "num_classes"),
    (lambda: mix(label_format="dense"), ValueError, "label_format"),
    (lambda: RandWassersteinMix("image", (), num_classes=3), ValueError, "label_keys must name"),
    (lambda: RandWassersteinMix({"image": "mask"}, "label", num_classes=3), ValueError,
     "keys: the role of key 'image' must be one of"),
    (lambda: RandWassersteinMix({"label": "label"}, "label", num_classes=3), ValueError, "must not share"),
    (lambda: RandWassersteinMix(("image", "label"), "label", num_classes=3), ValueError, "must not share"),
    (lambda: RandWassersteinMix("image", ("a", "a"), num_classes=3), ValueError, "must not repeat"),
]


@pytest.mark.parametrize("build, error, match", BAD_ARGUMENTS)
def test_bad_arguments_fail_at_construction(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_bad_data_fails_clearly():
    data = make_data("cpu")
    with pytest.raises(TypeError, match="images must be real numbers"):
        hist()(data["image"] > 0.5)
    with pytest.raises(TypeError, match="images must be real numbers"):
        mix()({"image": data["image"] > 0.5, "label": data["label"]})
    with pytest.raises(ValueError, match="batch size"):
        mix()({"image": data["image"], "label": data["label"][:2]})
    transform = hist()
    transform(data)
    bad = dict(transform.last_params, partner=transform.last_params["partner"].float())
    with pytest.raises(TypeError, match=r"params\['partner'\] must be an integer tensor"):
        transform(data, params=bad)
    with pytest.raises(ValueError, match="batch size 2"):
        transform(data["image"][:2], params=transform.last_params)
    # NaN is not checked (a host sync): it stays in its channel and the channels moved toward it
    image = data["image"].clone()
    image[0, 0, 0, 0] = float("nan")
    transform = hist(prob=1.0, generator=torch.Generator().manual_seed(0))
    out = transform(image)
    partner = transform.last_params["partner"].tolist()
    assert out[0, 0, 0, 0].isnan() and torch.isfinite(out[0, 1]).all()
    for b in range(1, 4):
        assert torch.isfinite(out[b, 1]).all() and (partner[b] == 0 or torch.isfinite(out[b, 0]).all())

@pytest.mark.cuda
def test_cuda_matches_cpu_with_a_cpu_generator():
    for factory in (lambda: hist(prob=0.7, generator=torch.Generator().manual_seed(0)),
                    lambda: mix(prob=0.7, generator=torch.Generator().manual_seed(0))):
        out = factory()(make_data("cuda"))
        ref = factory()(make_data("cpu"))
        assert out["image"].device.type == "cuda"
        torch.testing.assert_close(out["image"].cpu(), ref["image"], rtol=1e-4, atol=1e-4)
        mismatch = (out["label"].cpu() != ref["label"]).float().mean()
        assert mismatch < 0.01  # float32 barycenters: ties may break differently
