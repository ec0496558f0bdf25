"""``python -m morphaug.build``: compile morphaug's native kernels for the installed torch (see :mod:`morphaug.build`)."""

from __future__ import annotations

import argparse
import importlib.util
import sys

from . import NativeBuildError, __doc__ as build_module_doc, build, cached_library


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m morphaug.build", description=build_module_doc.split("\n\n")[0])
    cuda = parser.add_mutually_exclusive_group()
    cuda.add_argument("--cuda", dest="cuda", action="store_true", default=None, help="build the CUDA kernels too")
    cuda.add_argument("--no-cuda", dest="cuda", action="store_false", help="build the CPU kernels only")
    parser.add_argument("--jobs", type=int, default=None, help="parallel compile jobs (default: every core)")
    parser.add_argument("--quiet", action="store_true", help="print only the result")
    parser.add_argument("--force", action="store_true", help="rebuild even when this environment has them")
    args = parser.parse_args(argv)
    own = importlib.util.find_spec("morphaug._C")
    library = own.origin if own is not None else cached_library()
    if library is not None and not args.force:
        print(f"morphaug's native kernels are already built for this environment: {library} (--force builds "
              "them again into the cache, which a new process loads where the package has none of its own)")
        return 0
    try:
        library = build(cuda=args.cuda, jobs=args.jobs, quiet=args.quiet)
    except NativeBuildError as error:
        print(f"morphaug.build: {error}", file=sys.stderr)
        return 1
    print(f"morphaug's native kernels: {library}\n`import morphaug` loads them from there in a new process.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
