"""Build of morphaug's optional native kernels, the extension module ``morphaug._C``.

    pip install --no-build-isolation --no-deps -e .

The package metadata lives in pyproject.toml; this file only adds the
extension. Without torch at build time, without a compiler, or when the
compilation fails, morphaug still installs and runs on its pure-torch backend.

Environment variables:

``MORPHAUG_CUDA=0|1``
    Leave out / require the CUDA kernels. Default: built when torch is a CUDA
    build and nvcc is found (``CUDA_HOME``, ``nvcc`` on PATH or /usr/local/cuda).
``MORPHAUG_REQUIRE_NATIVE=1``
    Make any failure to build the native kernels an error (CI sets it).
``TORCH_CUDA_ARCH_LIST``
    CUDA architectures; default "9.0" when no GPU is visible at build time,
    otherwise the visible GPUs' (torch's own default).
``MAX_JOBS``
    Parallel compile jobs (ninja is used when found).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def env_flag(name: str) -> bool | None:
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return None
    return value not in ("0", "false", "no", "off")


REQUIRE_NATIVE = env_flag("MORPHAUG_REQUIRE_NATIVE") is True


class NativeBuildError(RuntimeError):
    pass


def give_up(reason: str) -> None:
    """Fail the build when native kernels are required, else warn and go on without them."""
    if REQUIRE_NATIVE:
        raise NativeBuildError(f"morphaug native kernels: {reason} (MORPHAUG_REQUIRE_NATIVE=1)")
    print(f"WARNING: morphaug native kernels not built: {reason}; "
          "morphaug installs with its pure-torch backend only", file=sys.stderr)


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


def native_extensions() -> tuple[list, dict]:
    cuda_home = find_cuda_home()
    if cuda_home and not os.environ.get("CUDA_HOME"):
        os.environ["CUDA_HOME"] = cuda_home  # read by torch.utils.cpp_extension at import
    # ninja installed next to this Python (a venv) may not be on PATH
    scripts = str(Path(sys.executable).parent)
    if shutil.which("ninja") is None and (Path(scripts) / "ninja").exists():
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")
    try:
        import torch
        from torch.utils import cpp_extension
    except ImportError as error:
        give_up(f"torch is not importable at build time ({error}); install with --no-build-isolation")
        return [], {}

    want_cuda = env_flag("MORPHAUG_CUDA")
    can_cuda = torch.version.cuda is not None and cuda_home is not None
    if want_cuda and not can_cuda:
        missing = "is a CPU-only build" if torch.version.cuda is None else "finds no nvcc (set CUDA_HOME)"
        give_up(f"MORPHAUG_CUDA=1 but torch {torch.__version__} {missing}")
        return [], {}
    use_cuda = can_cuda if want_cuda is None else want_cuda

    def files(folder: str, pattern: str) -> list[str]:
        return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "csrc" / folder).glob(pattern))

    sources = ["csrc/ops.cpp", *files("cpu", "*.cpp")]
    compile_args = {"cxx": ["-O3", "-fno-math-errno"]}
    link_args = []
    if torch.backends.openmp.is_available() and sys.platform.startswith("linux"):
        # at::parallel_for is an inline template: without -fopenmp its OpenMP
        # pragma is dropped and every loop runs on one thread.
        compile_args["cxx"].append("-fopenmp")
        link_args.append("-fopenmp")
    if use_cuda:
        sources += files("cuda", "*.cu")
        compile_args["nvcc"] = ["-O3", "--expt-relaxed-constexpr"]
        if not os.environ.get("TORCH_CUDA_ARCH_LIST") and not torch.cuda.is_available():
            os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0"
        extension = cpp_extension.CUDAExtension
    else:
        extension = cpp_extension.CppExtension
    module = extension("morphaug._C", sources, include_dirs=[str(ROOT / "csrc")],
                       extra_compile_args=compile_args, extra_link_args=link_args)

    class BuildNative(cpp_extension.BuildExtension):
        """torch's BuildExtension (ninja when found) that degrades to no extension on failure."""

        def run(self):
            try:
                super().run()
            except Exception as error:  # compiler missing or compilation failed
                give_up(f"compilation failed ({type(error).__name__}: {error})")

        def get_outputs(self):
            return [path for path in super().get_outputs() if os.path.exists(path)]

    return [module], {"build_ext": BuildNative}


extensions, commands = native_extensions()
setup(ext_modules=extensions, cmdclass=commands or {"build_ext": build_ext})
