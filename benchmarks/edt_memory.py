"""Peak extra host memory of distance_transform_edt: morphaug against SciPy.

    python benchmarks/edt_memory.py [--size 192]

Each library runs in a fresh process on the same 1x1xN^3 mask (1% background);
the extra peak is the growth of the process's maximum resident set size over
the call, after a warm-up on a tiny input.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys

import numpy as np


def measure(library: str, size: int) -> float:
    """Extra peak resident memory (MiB) of one EDT call in this process."""
    import scipy.ndimage as ndi
    import torch

    import morphaug.ndimage as mnd

    rng = np.random.default_rng(0)
    mask = np.ones((size,) * 3, bool)
    mask.flat[rng.integers(0, mask.size, mask.size // 100)] = False
    if library == "morphaug":
        tensor = torch.from_numpy(mask)[None, None]
        mnd.distance_transform_edt(tensor[..., :8, :8, :8])
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        mnd.distance_transform_edt(tensor)
    else:
        ndi.distance_transform_edt(mask[:8, :8, :8])
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        ndi.distance_transform_edt(mask)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=192)
    parser.add_argument("--library", choices=["morphaug", "scipy"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.library:
        print(measure(args.library, args.size))
        return 0
    peaks = {}
    for library in ("morphaug", "scipy"):
        output = subprocess.run([sys.executable, __file__, "--size", str(args.size), "--library", library],
                                capture_output=True, text=True, check=True).stdout
        peaks[library] = float(output.split()[-1])
    print(f"distance_transform_edt 1x1x{args.size}^3: extra peak memory morphaug "
          f"{peaks['morphaug']:.0f} MiB, SciPy {peaks['scipy']:.0f} MiB "
          f"(ratio {peaks['morphaug'] / peaks['scipy']:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
