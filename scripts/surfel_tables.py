"""Write ``morphaug/metrics/_surfel_tables.py``: the surface elements of each 2x2(x2) neighbourhood code.

A cell of 2**S voxels (S = 2 or 3) is encoded with corner ``(a, b[, c])`` at bit
``2**S - 1 - (a b c read as a binary number)`` (DeepMind's ``surface_distance``
order). Its surface is the marching-squares contour / classic (Lorensen)
marching-cubes surface through the midpoints of the cell's edges, built on the
side of the cell with fewer inside corners (the complement's surface when more
than half are inside), as the classic 15-case table does. Each segment or
triangle is stored as its normal vector with the element's length / area as its
norm, in units of 1/8 of a voxel (every normal is a multiple of it): scaling an
axis by ``s_i`` scales normal component ``i`` by the product of the other
spacings. Run: ``python scripts/surfel_tables.py`` (needs scikit-image).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
from skimage import measure

OUT = Path(__file__).resolve().parents[1] / "morphaug" / "metrics" / "_surfel_tables.py"


def _corners(code: int, rank: int) -> np.ndarray:
    cell = np.zeros((2,) * rank)
    for i, corner in enumerate(itertools.product((0, 1), repeat=rank)):
        cell[corner] = (code >> (2 ** rank - 1 - i)) & 1
    return cell


def _inside_cell(points: np.ndarray) -> np.ndarray:
    """Which elements (their points ``(E, P, S)`` in the padded grid) lie inside the central cell."""
    centre = points.mean(1)
    return np.all((centre > 1) & (centre < 2), axis=1)


def _normals(code: int, rank: int) -> list[tuple[int, ...]]:
    """The normals of the elements of one code, in eighths of a voxel."""
    full = 2 ** (2 ** rank) - 1
    minority = code if bin(code).count("1") <= 2 ** (rank - 1) else full - code
    if minority == 0:
        return []
    cell = np.pad(_corners(minority, rank), 1)  # the cell alone, at [1, 2] on each axis
    if rank == 3:
        verts, faces, _, _ = measure.marching_cubes(cell, 0.5, method="lorensen")
        triangles = verts[faces]
        triangles = triangles[_inside_cell(triangles)]
        normals = 0.5 * np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    else:
        segments = [np.stack([c[:-1], c[1:]], 1) for c in measure.find_contours(cell, 0.5)]
        segments = np.concatenate(segments) if segments else np.zeros((0, 2, 2))
        segments = segments[_inside_cell(segments)]
        step = segments[:, 1] - segments[:, 0]
        normals = np.stack([step[:, 1], -step[:, 0]], 1)  # the segment turned a quarter: its length kept
    eighths = np.rint(normals * 8)
    assert np.allclose(eighths, normals * 8), "normals are multiples of 1/8"
    return [tuple(int(v) for v in n) for n in eighths]


def table(rank: int) -> list[list[tuple[int, ...]]]:
    return [_normals(code, rank) for code in range(2 ** (2 ** rank))]


def main() -> None:
    lines = ['"""Surface elements of each neighbourhood code (written by scripts/surfel_tables.py: do not edit).',
             "",
             "``NORMALS_2D[code]`` / ``NORMALS_3D[code]``: the normals of the contour segments / surface",
             "triangles of a 2x2 / 2x2x2 cell, in eighths of a voxel (their norms are the lengths / areas).",
             '"""', ""]
    for rank in (2, 3):
        lines.append(f"NORMALS_{rank}D = (")
        lines += [f"    {tuple(normals)!r}," for normals in table(rank)]
        lines.append(")")
        lines.append("")
    OUT.write_text("\n".join(lines))


if __name__ == "__main__":
    main()
