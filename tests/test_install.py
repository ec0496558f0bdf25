"""A newcomer's install: what the sdist and a wheel carry, the warning without the native
kernels, the after-the-fact build's cache, and what backend_info says (issue 33).

The wheel test builds with pip's default build isolation (what ``pip install .`` and
``pip install git+...`` do), which installs the pure-torch backend, and then loads the
native library this checkout built from the cache folder ``python -m morphaug.build``
writes; compiling that library again would take minutes, so the build itself is not
rerun here.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest
import torch

import morphaug
from morphaug import build
from morphaug._ops import _library

# Under `pytest -n 2 --dist loadgroup` the module runs on one worker: the isolated wheel is built once.
pytestmark = pytest.mark.xdist_group("test_install")

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "csrc").rglob("*") if p.is_file())


def _run(args, **kwargs):
    result = subprocess.run(args, capture_output=True, text=True, timeout=600, **kwargs)
    assert result.returncode == 0, f"{args} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


@pytest.fixture(scope="module")
def isolated_wheel(tmp_path_factory):
    """A wheel built as ``pip install .`` builds it: in pip's isolated environment, without torch."""
    folder = tmp_path_factory.mktemp("wheel")
    source = folder / "source"  # a copy without build outputs, as a clone has
    outputs = shutil.ignore_patterns("*.so", "__pycache__", "_native_build.json", "*.egg-info")

    def ignore(folder, names):
        top = {".venv", ".git", "build", "dist"} & set(names) if Path(folder) == ROOT else set()
        return top | outputs(folder, names)

    shutil.copytree(ROOT, source, ignore=ignore)
    env = {k: v for k, v in os.environ.items() if k != "MORPHAUG_REQUIRE_NATIVE"}
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(folder), str(source)], env=env)
    (wheel,) = folder.glob("morphaug-*.whl")
    return wheel


def test_sdist_carries_what_the_native_build_needs(tmp_path):
    _run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
         env={**os.environ, "MORPHAUG_CUDA_EMULATION": "0"})
    (sdist,) = tmp_path.glob("morphaug-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    missing = {*SOURCES, "setup.py", "pyproject.toml", "LICENSE", "README.md", "morphaug/build/__init__.py",
               "morphaug/build/__main__.py", "morphaug/py.typed"} - names
    assert not missing, f"the sdist lacks {sorted(missing)}"
    assert not [name for name in names if name.endswith((".so", ".o", ".pyc"))]


def test_isolated_wheel_is_pure_torch_and_says_why(isolated_wheel):
    with zipfile.ZipFile(isolated_wheel) as archive:
        names = set(archive.namelist())
        record = json.loads(archive.read("morphaug/_native_build.json"))
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert {"morphaug/py.typed", "morphaug/build/__init__.py", "morphaug/build/__main__.py"} <= names
    assert any(name.endswith(".dist-info/licenses/LICENSE") or name.endswith(".dist-info/LICENSE") for name in names)
    assert {f"morphaug/_csrc/{name[len('csrc/'):]}" for name in SOURCES} <= names
    assert not [name for name in names if "/_C" in name and name.endswith(".so")]
    assert record["built"] is False and "--no-build-isolation" in record["reason"]
    assert "Requires-Dist: torch>=2.4" in metadata


# Only the unpacked wheel: the editable install of this checkout finds morphaug's submodules too.
ONLY_THE_WHEEL = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path "
                  "if '__editable__' not in getattr(f, '__module__', '')]\n")

WARNED_CALL = ONLY_THE_WHEEL + textwrap.dedent("""
    import json, sys, warnings
    import numpy as np, scipy.ndimage as ndi, torch
    import morphaug, morphaug.ndimage as mnd
    assert morphaug.__file__.startswith(sys.argv[1]), morphaug.__file__
    x = torch.rand(2, 1, 9, 9, generator=torch.Generator().manual_seed(0)) > 0.4
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = mnd.binary_erosion(x)
        mnd.distance_transform_edt(x)
    expected = np.stack([ndi.binary_erosion(s) for s in x[:, 0].numpy()])[:, None]
    assert np.array_equal(first.numpy(), expected)
    info = morphaug.backend_info(verbose=False)
    print(json.dumps({"warnings": [str(w.message) for w in caught if w.category is morphaug.NativeKernelsWarning],
                      "native": info["native_devices"], "error": info["native_error"],
                      "library": info["native_library"], "repr": repr(info)}))
""")


def _call_installed(unpacked: Path, cache: Path, **env) -> dict:
    environment = {k: v for k, v in os.environ.items() if k not in ("MORPHAUG_BACKEND", "MORPHAUG_EMULATE_CUDA")}
    environment.update(PYTHONPATH=str(unpacked), MORPHAUG_CACHE_DIR=str(cache), **env)
    result = _run([sys.executable, "-c", WARNED_CALL, str(unpacked)], env=environment, cwd=unpacked)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_without_kernels_warns_once_then_loads_what_morphaug_build_cached(isolated_wheel, tmp_path):
    unpacked, cache = tmp_path / "site", tmp_path / "cache"
    with zipfile.ZipFile(isolated_wheel) as archive:
        archive.extractall(unpacked)

    report = _call_installed(unpacked, cache)
    assert report["native"] == [] and len(report["warnings"]) == 1, report
    (message,) = report["warnings"]
    assert "python -m morphaug.build" in message and "build isolation" in message
    assert "pip install --no-build-isolation" in report["error"]
    assert len(report["repr"]) < 200

    assert _call_installed(unpacked, cache, MORPHAUG_BACKEND="torch")["warnings"] == []

    library = _library.load_native(False)[0]
    if library is None:
        pytest.skip("this checkout has no native library to place in the cache")
    folder = _cache_folder_of(unpacked, cache) / "morphaug"
    folder.mkdir(parents=True)
    shutil.copy(library.__file__, folder)
    report = _call_installed(unpacked, cache)
    assert report["warnings"] == [] and "cpu" in report["native"] and report["error"] is None
    assert report["library"].startswith(str(cache))


def _cache_folder_of(unpacked: Path, cache: Path) -> Path:
    """The cache folder the unpacked wheel's ``morphaug.build`` picks (its own copy of the sources)."""
    code = ONLY_THE_WHEEL + "from morphaug import build; print(build.cache_folder())"
    result = _run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(unpacked),
                                                      "MORPHAUG_CACHE_DIR": str(cache)}, cwd=unpacked)
    return Path(result.stdout.strip())


def test_the_packaged_sources_key_the_cache_as_the_checkout_does():
    assert build.source_root() == ROOT / "csrc"
    assert build.cache_folder().name.startswith(f"torch-{torch.__version__}-py")


def test_a_library_built_for_another_torch_is_named_as_such():
    error = ImportError("/x/morphaug/_C.so: undefined symbol: _ZN3c104cuda9SetDeviceEa", name="morphaug._C")
    message = _library._why_missing(error)
    assert "another torch" in message and "python -m morphaug.build" in message


def test_cuda_is_compiled_only_for_a_visible_gpu_or_when_asked(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("MORPHAUG_CUDA", "0")
    assert build.cuda_choice() == (False, "MORPHAUG_CUDA=0")
    monkeypatch.delenv("MORPHAUG_CUDA")
    built, why = build.cuda_choice()
    assert not built and why
    if torch.version.cuda is None or build.find_cuda_home() is None:
        monkeypatch.setenv("MORPHAUG_CUDA", "1")
        with pytest.raises(build.NativeBuildError, match="MORPHAUG_CUDA=1"):
            build.cuda_choice()
    else:
        assert "no GPU visible" in why
        monkeypatch.setenv("MORPHAUG_CUDA", "1")
        assert build.cuda_choice() == (True, "MORPHAUG_CUDA=1")
        monkeypatch.delenv("TORCH_CUDA_ARCH_LIST", raising=False)
        build._prepare_cuda_environment()
        assert os.environ["TORCH_CUDA_ARCH_LIST"] == build.DEFAULT_CUDA_ARCHS


def test_the_installed_metadata_pins_the_torch_release_of_the_kernels():
    if _library.load_native(False)[0] is None:
        pytest.skip("installed without native kernels")
    requires = importlib.metadata.requires("morphaug")
    assert build.torch_requirement(True) in requires, requires
    assert build.torch_requirement(True) == "torch=={}.{}.*".format(*torch.__version__.split(".")[:2])


def test_compile_flags_carry_no_debug_info():
    flags, _ = build.compile_args()
    assert "-g0" in flags["cxx"] and "-g" not in flags["cxx"]


def test_backend_info_prints_a_summary_and_returns_a_short_repr(capsys):
    info = morphaug.backend_info()
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) < len(_library.KERNELS) + 10
    assert len(repr(info)) < 200 and repr(info).startswith("BackendInfo(")
    morphaug.backend_info(tables=True)
    assert len(capsys.readouterr().out.splitlines()) > len(printed) + len(info["tables"])
