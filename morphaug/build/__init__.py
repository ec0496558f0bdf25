"""Build morphaug's native kernels, ``morphaug._C``, for the installed torch.

    python -m morphaug.build [--cuda | --no-cuda] [--jobs N] [--quiet] [--force]

A ``pip install`` with pip's default build isolation compiles in an
environment without torch, so it installs the pure-torch backend only (and
morphaug warns at the first call a native kernel would take). This command
compiles the C++ (and CUDA) sources that ship with morphaug against the torch
of this environment into a cache folder, ``$MORPHAUG_CACHE_DIR`` (default
``$XDG_CACHE_HOME/morphaug``, i.e. ``~/.cache/morphaug``), one subfolder per
torch release, Python and source version; the next ``import morphaug`` loads
it. It needs a C++ compiler (and nvcc for the CUDA kernels).

This module is also the one description of the build that ``setup.py`` uses
(``pip install --no-build-isolation .``): the sources, the compiler flags,
and whether the CUDA kernels are built:

``MORPHAUG_CUDA=0|1``
    Leave out / require the CUDA kernels. Default: built when torch is a CUDA
    build, nvcc is found (``CUDA_HOME``, ``nvcc`` on PATH or /usr/local/cuda)
    and a GPU is visible; a machine without a GPU compiles for none, since
    nothing there could run or check them.
``TORCH_CUDA_ARCH_LIST``
    The CUDA architectures: default the visible GPUs' (torch's own default),
    :data:`DEFAULT_CUDA_ARCHS` when ``MORPHAUG_CUDA=1`` and no GPU is visible.
``MAX_JOBS``
    Parallel compile jobs (ninja, when found, uses every core by default).

The compiled kernels load with the torch release they were built against
only; a wheel built with them declares ``torch==X.Y.*``.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

__all__ = ["DEFAULT_CUDA_ARCHS", "NativeBuildError", "put_ninja_on_path", "source_root", "cuda_choice", "extension",
           "torch_requirement", "cache_folder", "cached_library", "build"]

#: Architectures compiled by ``MORPHAUG_CUDA=1`` without a visible GPU or ``TORCH_CUDA_ARCH_LIST``: Turing
#: and Ampere binaries (8.0's run on 8.6 and 8.9), Hopper's with PTX that newer GPUs compile at load.
DEFAULT_CUDA_ARCHS = "7.5;8.0;9.0+PTX"
_PACKAGE = Path(__file__).resolve().parent.parent  # morphaug/


class NativeBuildError(RuntimeError):
    """The native kernels cannot be built as asked."""


def _flag(name: str) -> bool | None:
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return None
    return value not in ("0", "false", "no", "off")


def source_root() -> Path | None:
    """The folder of the C++ / CUDA sources: ``morphaug/_csrc`` in an installed wheel,
    ``csrc/`` beside the package in a checkout or an editable install; None without them."""
    for root in (_PACKAGE / "_csrc", _PACKAGE.parent / "csrc"):
        if (root / "ops.cpp").is_file():
            return root
    return None


def _files(root: Path, folder: str, pattern: str) -> list[Path]:
    return sorted((root / folder).glob(pattern))


def find_cuda_home() -> str | None:
    """A CUDA toolkit root holding bin/nvcc and include/cuda_runtime.h."""
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(str(Path(nvcc).resolve().parent.parent))
    candidates.append("/usr/local/cuda")
    for home in filter(None, candidates):
        root = Path(home)
        if (root / "bin" / "nvcc").exists() and (root / "include" / "cuda_runtime.h").exists():
            return home
    return None


def cuda_choice() -> tuple[bool, str]:
    """Whether to compile the CUDA kernels, and why (see the module notes).

    Raises NativeBuildError when ``MORPHAUG_CUDA=1`` asks for them and they cannot be built.
    """
    import torch

    wanted = _flag("MORPHAUG_CUDA")
    if wanted is False:
        return False, "MORPHAUG_CUDA=0"
    cuda_home = find_cuda_home()
    missing = (f"torch {torch.__version__} is a CPU-only build" if torch.version.cuda is None
               else "no nvcc found (set CUDA_HOME)" if cuda_home is None else None)
    if wanted:
        if missing:
            raise NativeBuildError(f"MORPHAUG_CUDA=1, but {missing}")
        return True, "MORPHAUG_CUDA=1"
    if missing:
        return False, missing
    if not torch.cuda.is_available():
        return False, "no GPU visible at build time (MORPHAUG_CUDA=1 builds them anyway)"
    return True, "a GPU is visible"


def put_ninja_on_path() -> None:
    """The ninja installed next to this Python (a venv's), which may not be on PATH: torch builds in
    parallel with it, one file at a time without it."""
    scripts = str(Path(sys.executable).parent)
    if shutil.which("ninja") is None and (Path(scripts) / "ninja").exists():
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")


def _prepare_cuda_environment() -> None:
    """CUDA_HOME for torch.utils.cpp_extension, and the default architectures without a visible GPU."""
    import torch
    from torch.utils import cpp_extension

    cuda_home = os.environ.get("CUDA_HOME") or find_cuda_home()
    if cuda_home:
        os.environ["CUDA_HOME"] = cuda_home
        # read once when cpp_extension is imported, where an nvcc on PATH outside the toolkit (a link in
        # /usr/local/bin) makes it guess a root without lib64/libcudart: the link would fail
        cpp_extension.CUDA_HOME = cuda_home
    if not os.environ.get("TORCH_CUDA_ARCH_LIST") and not torch.cuda.is_available():
        os.environ["TORCH_CUDA_ARCH_LIST"] = DEFAULT_CUDA_ARCHS


def compile_args() -> tuple[dict[str, list[str]], list[str]]:
    """The compiler flags (``{"cxx": [...], "nvcc": [...]}``) and linker flags of every native source."""
    import torch

    # -g0: Python's own CFLAGS carry -g, which made _C.so 78 MB instead of 10 MB.
    cxx = ["-O3", "-fno-math-errno", "-g0"]
    link = []
    if torch.backends.openmp.is_available() and sys.platform.startswith("linux"):
        # at::parallel_for is an inline template: without -fopenmp its OpenMP
        # pragma is dropped and every loop runs on one thread.
        cxx.append("-fopenmp")
        link.append("-fopenmp")
    return {"cxx": cxx, "nvcc": ["-O3", "--expt-relaxed-constexpr"]}, link


def extension(root: Path, cuda: bool, relative_to: Path | None = None):
    """The ``morphaug._C`` extension of the sources under ``root`` (paths relative to ``relative_to``
    where given, as setup.py needs them)."""
    from torch.utils import cpp_extension

    if cuda:
        _prepare_cuda_environment()
    sources = [root / "ops.cpp", *_files(root, "cpu", "*.cpp"), *(_files(root, "cuda", "*.cu") if cuda else [])]
    if relative_to is not None:
        sources = [path.relative_to(relative_to) for path in sources]
    flags, link = compile_args()
    if not cuda:
        del flags["nvcc"]
    kind = cpp_extension.CUDAExtension if cuda else cpp_extension.CppExtension
    module = kind("morphaug._C", [str(path) for path in sources], include_dirs=[str(root)],
                  extra_compile_args=flags, extra_link_args=link)
    cuda_home = os.environ.get("CUDA_HOME") or find_cuda_home()
    if not cuda and cuda_home:
        # the include folders of a CUDA build, which the C++ sources do not use: their compile commands
        # are then the same with or without the CUDA kernels, and ninja keeps their objects when a
        # build adds the CUDA kernels to one without (make test after make demo)
        module.include_dirs.append(os.path.join(cuda_home, "include"))
    return module


def torch_requirement(native: bool) -> str:
    """The torch requirement of a wheel: the release its native kernels were built against, else any recent one."""
    if not native:
        return "torch>=2.4"
    import torch

    major, minor = re.match(r"(\d+)\.(\d+)", torch.__version__).groups()
    return f"torch=={major}.{minor}.*"


def _source_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".h", ".cuh", ".cpp", ".cu")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_folder(root: Path | None = None) -> Path:
    """Where :func:`build` puts the kernels for this torch, Python and these sources."""
    import torch

    base = os.environ.get("MORPHAUG_CACHE_DIR") or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "morphaug"
    root = root or source_root()
    sources = _source_digest(root) if root is not None else "nosources"
    python = f"py{sys.version_info[0]}{sys.version_info[1]}"
    return Path(base) / f"torch-{torch.__version__}-{python}-{sources}"


def cached_library() -> Path | None:
    """The ``morphaug._C`` that :func:`build` made for this environment, if any."""
    root = source_root()
    if root is None:
        return None
    found = sorted((cache_folder(root) / "morphaug").glob("_C.*.so")) + sorted(
        (cache_folder(root) / "morphaug").glob("_C.*.pyd"))
    return found[0] if found else None


def build(cuda: bool | None = None, jobs: int | None = None, quiet: bool = False) -> Path:
    """Compile ``morphaug._C`` for the installed torch into :func:`cache_folder`; its path.

    ``cuda``: True / False set ``MORPHAUG_CUDA``; None decides as it says (see the module notes).
    Raises NativeBuildError when there are no sources, CUDA is asked for and cannot be built, or
    the compilation fails.
    """
    from setuptools import setup
    from torch.utils import cpp_extension

    root = source_root()
    if root is None:
        raise NativeBuildError("this morphaug installation carries no C++ sources (morphaug/_csrc or csrc/)")
    if cuda is not None:
        os.environ["MORPHAUG_CUDA"] = "1" if cuda else "0"
    cuda, _ = cuda_choice()
    if jobs is not None:
        os.environ["MAX_JOBS"] = str(jobs)
    target = cache_folder(root)
    if target.exists():  # a rebuild: a process that loaded the old library keeps its (unlinked) file
        shutil.rmtree(target)
    put_ninja_on_path()
    with tempfile.TemporaryDirectory(prefix="morphaug-build-") as temp:
        arguments = ["build_ext", "--build-lib", str(target), "--build-temp", temp]
        try:
            setup(name="morphaug-native", script_args=(["--quiet"] if quiet else []) + arguments,
                  ext_modules=[extension(root, cuda)], cmdclass={"build_ext": cpp_extension.BuildExtension})
        except (Exception, SystemExit) as error:
            raise NativeBuildError(f"compiling morphaug's native kernels failed: {error}") from error
    library = cached_library()
    if library is None:
        raise NativeBuildError(f"the build finished but left no morphaug/_C library in {target}")
    return library
