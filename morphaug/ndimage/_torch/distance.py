"""Distance transforms on the torch backend: EDT, CDT and brute force.

:func:`edt` (``.edt``), :func:`cdt` (``.cdt``) and :func:`bf` (``.bf``) are the torch kernels of
``morphaug.ndimage._distance``'s dispatch tables. Each takes a non-empty bool
``(B, C, *spatial)`` foreground mask and returns the distances and, when
asked, SciPy's feature transform as int32 ``(S, B, C, *spatial)`` indices.

Algorithms and cost (torch backend)
-----------------------------------
* EDT is separable: the nearest background along axis 0 by two cumulative
  sweeps, then per axis ``d`` the exact ``g'(i) = min_j g(j) + (s_d (i - j))^2``
  over each line. Its first argmin never decreases with ``i``, so lines
  longer than ``_SHORT_LINE`` take a divide and conquer by levels
  (``edt._first_argmin``): ``log2 n_d`` steps, work ``O(N log n_d)``;
  shorter lines compare every pair at once (work ``O(N n_d)``). Memory
  ``O(N)`` plus one block of at most about ``_ENVELOPE_BLOCK`` candidates
  (a line at least).
* CDT with the chessboard metric and no indices: the exact L-infinity
  distance (SciPy's two passes compute it), separable in the same way, with
  ``min_j max(g(j), |i - j|)`` along the axes after the first.
* Any other CDT replays SciPy's two raster passes (``NI_DistanceTransformOnePass``),
  values and features alike, in one of two ways (the results are the same):

  - Sweeps along the axes, for the taxicab and chessboard neighbourhoods (see
    the comment above ``cdt._sweep_pass``). Taxicab: one cumulative minimum
    per axis and pass, ``O(S)`` kernels of work ``O(N)``. Chessboard, first
    pass: along each axis ``k < S - 1`` a scan of ``log2 n_k`` levels, each a
    box minimum over the later axes and then the pass over them
    (``prod_k (log2 n_k + 1)`` kernels of work ``O(N)``); axes of at most
    ``_SEQUENTIAL_AXIS`` voxels, or before later axes of unequal lengths (where
    the scan is not exact), take one step per slice instead; second
    pass: its values are the exact distances, separable as above. Taken when
    an estimate of their CPU time beats the wavefronts' (long or many axes:
    a (100000, 1) input takes 0.1 s, where the wavefronts took 110 s; large
    cubes go to the wavefronts). Features: the neighbour SciPy picks at each
    voxel, ``O(S)`` kernels, then pointer jumping, ``log2 N`` gathers.
  - Wavefronts of rows, for any neighbourhood. Rows along the last axis are
    independent inside one wavefront of rows (rows whose weighted row
    coordinates sum to the same value), so the scan is a Python loop over
    wavefronts, vectorised over the batch and all rows of a wavefront; inside
    a row the update ``v[j] = min(a[j], v[j-1] + 1)`` is one cumulative
    minimum. A 2-D input takes ``n_0`` steps per pass, a 3-D one ``2 n_0 +
    n_1`` with the chessboard metric: ``O(sum of the sides)`` steps of one
    small kernel per row offset of the neighbourhood (``(3^(S-1) - 1) / 2``
    for the chessboard), work ``O(N)`` per offset.
* BF compares every voxel with every background voxel of its slice, in
  blocks of at most ``_CHUNK_ELEMENTS``: work ``O(B C N^2)``.
"""

from .bf import bf
from .cdt import cdt, taxicab_neighbourhood
from .edt import edt

__all__ = ["bf", "cdt", "edt", "taxicab_neighbourhood"]
