"""Every adapter class (MONAI, torchvision v2, Kornia) shows its real signature.

Transforms: every core parameter by name and default (less those the framework supplies, with its own
spelling of ``prob``), plus the adapter's own; ``__init__`` takes exactly those, each documented once in
``help(cls)``. MONAI's metric classes (``morphaug.adapters.monai_metrics``): MONAI's class's signature.
MONAI's config tooling builds every MONAI class.
"""

from __future__ import annotations

import inspect
import pydoc
import re

import pytest
import torch

from morphaug import transforms as core

monai_adapters = pytest.importorskip("morphaug.adapters.monai", exc_type=ImportError)
monai_metrics = pytest.importorskip("monai.metrics")
tv_adapters = pytest.importorskip("morphaug.adapters.torchvision", exc_type=ImportError)
kornia_adapters = pytest.importorskip("morphaug.adapters.kornia", exc_type=ImportError)

#: per framework: core parameters it supplies itself, its spelling of ``prob``, its own parameters (default)
FRAMEWORKS = {
    monai_adapters: ({"generator"}, {}, {"batched": False}),
    tv_adapters: ({"keys", "output_keys", "allow_missing_keys", "label_keys"}, {"prob": "p"}, {"spatial_ndim": 2}),
    kornia_adapters: ({"keys", "output_keys", "allow_missing_keys", "generator", "label_keys"}, {"prob": "p"},
                      {"same_on_batch": False, "keepdim": False}),
}
#: adapter classes with more parameters of their own, or other defaults
OWN = {
    monai_adapters.DistanceMapd: {"spacing_from_meta": False},
    monai_adapters.RandHistogramTransferd: {"batched": True},
    monai_adapters.RandWassersteinMixd: {"batched": True},
    tv_adapters.DistanceMap: {"output_key": None},
    tv_adapters.LabelBoundary: {"output_key": None},
    tv_adapters.InstanceBoundary: {"output_key": None},
    tv_adapters.SkeletonTarget: {"output_key": None},
    kornia_adapters.ExpandLabels2D: {"p": 1.0},
    kornia_adapters.ExpandLabels3D: {"p": 1.0},
    kornia_adapters.FillHoles2D: {"p": 1.0},
    kornia_adapters.FillHoles3D: {"p": 1.0},
    kornia_adapters.KeepLargestComponents2D: {"p": 1.0},
    kornia_adapters.KeepLargestComponents3D: {"p": 1.0},
    kornia_adapters.RemoveSmallComponents2D: {"p": 1.0},
    kornia_adapters.RemoveSmallComponents3D: {"p": 1.0},
}
#: the MONAI metric classes among the MONAI adapters; every other adapter class is a transform
METRICS = [getattr(monai_adapters, name) for name in monai_adapters.__all__
           if isinstance(getattr(monai_adapters, name), type)
           and issubclass(getattr(monai_adapters, name), monai_metrics.Metric)]
#: every adapter class but the metrics (a class of ``__all__`` without ``core_class``, like torchvision's
#: ``DenseTarget``, is a type the adapters return, no adapter)
ADAPTERS = [(module, getattr(module, name)) for module in FRAMEWORKS for name in module.__all__
            if getattr(module, name) not in METRICS and hasattr(getattr(module, name), "core_class")]
IDS = [f"{module.__name__.rsplit('.', 1)[1]}.{cls.__name__}" for module, cls in ADAPTERS]
MONAI_TRANSFORMS = [cls.__name__ for module, cls in ADAPTERS if module is monai_adapters]


def required(cls) -> dict:
    """The arguments without a default: MONAI's keys."""
    if cls.__module__ != monai_adapters.__name__:
        return {}
    return {"keys": "image" if cls.core_class is core.RandWassersteinMix else "label"}


def documented(cls) -> list[str]:
    """The parameter names of the ``Args:`` section of ``cls``'s docstring (Google style)."""
    doc = inspect.getdoc(cls)
    assert doc.count("\nArgs:\n") == 1, doc
    names = []
    for line in doc.split("\nArgs:\n")[1].splitlines():
        if line and not line.startswith(" "):
            break
        entry = re.match(r" {4}(\w+(?:, \w+)*): ", line)
        if entry:
            names += entry.group(1).split(", ")
    return names


@pytest.mark.parametrize("module, cls", ADAPTERS, ids=IDS)
def test_signature_is_the_core_s_plus_the_adapter_s_own(module, cls):
    dropped, renamed, own = FRAMEWORKS[module]
    own = {**own, **OWN.get(cls, {})}
    signature = inspect.signature(cls)
    parameters = signature.parameters
    core_parameters = inspect.signature(cls.core_class).parameters
    expected = {renamed.get(name, name): p.default for name, p in core_parameters.items() if name not in dropped}
    assert set(parameters) == set(expected) | set(own), signature
    for name, default in {**expected, **own}.items():
        assert parameters[name].default == default, (name, signature)
    assert not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters.values()), signature
    # __init__ takes exactly those: all of them by name, and nothing else
    everything = {name: p.default for name, p in parameters.items() if p.default is not p.empty}
    cls(**required(cls), **everything)
    with pytest.raises(TypeError, match="not_a_parameter"):
        cls(**required(cls), not_a_parameter=1)
    for name in dropped | set(renamed):
        if name not in parameters:
            with pytest.raises(TypeError, match=name):
                cls(**required(cls), **{name: None})
    # every parameter documented once, and help() shows the signature and the docs
    assert sorted(documented(cls)) == sorted(parameters), inspect.getdoc(cls)
    text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    assert f"{cls.__name__}{signature}" in text and "Args:" in text


@pytest.mark.parametrize("cls", [tv_adapters.RandLabelMorphology, tv_adapters.LabelBoundary,
                                 kornia_adapters.RandGreyMorphology2D, kornia_adapters.LabelBoundary3D,
                                 kornia_adapters.FillHoles2D])
def test_p_is_checked_under_its_own_name(cls):
    with pytest.raises(ValueError, match=r"^p must be a probability in \[0, 1\], got 1.5$"):
        cls(p=1.5)


@pytest.mark.parametrize("cls, name", [(monai_adapters.KeepLargestComponentsd, "batched"),
                                       (monai_adapters.DistanceMapd, "spacing_from_meta"),
                                       (kornia_adapters.RandLabelMorphology2D, "same_on_batch"),
                                       (kornia_adapters.DistanceMap3D, "keepdim")])
def test_adapter_flags_must_be_bools(cls, name):
    with pytest.raises(TypeError, match=f"^{name} must be True or False, got 'yes'$"):
        cls(**required(cls), **{name: "yes"})


def test_positional_arguments_follow_the_signature():
    t = monai_adapters.RandWassersteinMixd("image", "label", 0.5, num_classes=2)
    assert t.core.roles == {"image": "image", "label": "label"} and t.core.weight == (0.5, 0.5)
    assert monai_adapters.DistanceMapd("label", "sdf").core.output_keys == ("sdf",)
    assert tv_adapters.RandWassersteinMix(0.25).core.weight == (0.25, 0.25)
    assert kornia_adapters.RandLabelMorphology2D("erosion", 2).core.ops == ("erosion",)
    with pytest.raises(TypeError, match="positional"):  # 4: classes, connectivity, num_classes, label_format
        kornia_adapters.FillHoles2D(None, 1, None, None, "one too many")


def test_every_monai_name_is_a_transform_a_metric_a_loss_a_handler_or_a_function():
    from monai.handlers.ignite_metric import IgniteMetricHandler
    from monai.transforms import Transform

    assert METRICS
    for name in monai_adapters.__all__:
        obj = getattr(monai_adapters, name)
        kinds = [isinstance(obj, type) and issubclass(obj, Transform), obj in METRICS,
                 isinstance(obj, type) and issubclass(obj, torch.nn.Module),
                 isinstance(obj, type) and issubclass(obj, IgniteMetricHandler),
                 inspect.isfunction(obj)]
        assert sum(kinds) == 1, name


@pytest.mark.parametrize("name", ["HausdorffDistance", "SurfaceDistance", "PanopticQuality"])
def test_handler_is_monai_s_with_monai_s_signature(name):
    from monai import handlers as monai_handlers

    ours, theirs = getattr(monai_adapters, name), getattr(monai_handlers, name)
    assert issubclass(ours, theirs) and ours.__module__ == "morphaug.adapters.monai_handlers"
    assert inspect.signature(ours) == inspect.signature(theirs)


#: Values for the metric classes' arguments without a default.
REQUIRED_METRIC_ARGUMENTS = {"class_thresholds": [1.0, 2.0], "num_classes": 2}


@pytest.mark.parametrize("cls", METRICS, ids=[cls.__name__ for cls in METRICS])
def test_metric_class_is_monai_s_with_monai_s_signature(cls):
    theirs = getattr(monai_metrics, cls.__name__)
    assert issubclass(cls, theirs) and issubclass(cls, monai_metrics.CumulativeIterationMetric)
    assert cls.__module__ == "morphaug.adapters.monai_metrics"
    signature = inspect.signature(cls)
    assert signature == inspect.signature(theirs)
    needed = {name: value for name, value in REQUIRED_METRIC_ARGUMENTS.items() if name in signature.parameters}
    everything = {name: p.default for name, p in signature.parameters.items() if p.default is not p.empty}
    cls(**needed, **everything)
    with pytest.raises(TypeError, match="not_a_parameter"):
        cls(**needed, not_a_parameter=1)
    assert f"{cls.__name__}{signature}" in pydoc.render_doc(cls, renderer=pydoc.plaintext)


@pytest.mark.parametrize("cls", METRICS, ids=[cls.__name__ for cls in METRICS])
def test_monai_config_parser_builds_every_metric_class(cls):
    bundle = pytest.importorskip("monai.bundle")
    parameters = inspect.signature(cls).parameters
    flag = "include_background" if "include_background" in parameters else "return_confusion_matrix"
    config = {"_target_": f"morphaug.adapters.monai.{cls.__name__}", flag: True,
              **{name: value for name, value in REQUIRED_METRIC_ARGUMENTS.items() if name in parameters}}
    built = bundle.ConfigParser({"m": config}).get_parsed_content("m")
    assert type(built) is cls and getattr(built, flag) is True
    with pytest.raises(RuntimeError) as error:
        bundle.ConfigParser({"m": {**config, "not_a_parameter": 1}}).get_parsed_content("m")
    assert isinstance(error.value.__cause__, TypeError) and "not_a_parameter" in str(error.value.__cause__)


@pytest.mark.parametrize("name", MONAI_TRANSFORMS)
def test_monai_config_parser_builds_every_class(name):
    bundle = pytest.importorskip("monai.bundle")
    cls = getattr(monai_adapters, name)
    config = {"_target_": f"morphaug.adapters.monai.{name}", "keys": [required(cls)["keys"]],
              "allow_missing_keys": True}
    built = bundle.ConfigParser({"t": config}).get_parsed_content("t")
    assert type(built) is cls and built.core.keys == (required(cls)["keys"],) and built.core.allow_missing_keys
    with pytest.raises(RuntimeError) as error:
        bundle.ConfigParser({"t": {**config, "not_a_parameter": 1}}).get_parsed_content("t")
    assert isinstance(error.value.__cause__, TypeError) and "not_a_parameter" in str(error.value.__cause__)


def test_monai_config_parser_passes_adapter_and_core_arguments():
    bundle = pytest.importorskip("monai.bundle")
    config = {"_target_": "morphaug.adapters.monai.DistanceMapd", "keys": ["label"], "output_keys": ["sdf"],
              "signed": True, "classes": [1], "batched": True}
    t = bundle.ConfigParser({"t": config}).get_parsed_content("t")
    mask = torch.zeros(2, 1, 12, 12, dtype=torch.long)
    mask[:, :, 3:9, 4:10] = 1
    out = t({"label": mask})
    assert t.batched and torch.equal(out["sdf"], core.DistanceMap("label", signed=True, classes=[1])(mask))
