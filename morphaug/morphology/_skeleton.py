"""``skeletonize`` and ``thin``: scikit-image's skeletons of every ``(b, c)`` slice."""

from __future__ import annotations

import torch

from .. import _ops
from .._checks import check_host_int
from .._opaque import one_result, opaque_under_compile
from .._images import binary_image
from . import _parallel, _thinning

__all__ = ["METHODS", "skeletonize", "thin"]

#: ``skeletonize``'s methods and the spatial ranks each one takes.
METHODS = {"zhang": (2,), "lee": (2, 3), "parallel": (2, 3)}


def _no_lee(mask):
    reason = _ops.why_not("skeletonize_lee", mask.device.type, rank=3)
    raise NotImplementedError(f"method='lee' runs on morphaug's native CPU kernel only ({reason or 'it is off'}): "
                              "use method='parallel', a topology-preserving thinning close to it, on any device")


_LEE = _ops.Table("skeletonize(method='lee')", [
    _ops.Case("every input", "skeletonize_lee", lambda mask: True,
              lambda mask: _ops.kernels.skeletonize_lee(mask, _parallel.EULER_CHANGES.tolist())),
], _no_lee)


@opaque_under_compile(one_result("image", lambda kw: torch.bool))
def skeletonize(image, *, method=None):
    """The skeleton of every ``(b, c)`` slice, by thinning (``skimage.morphology.skeletonize``).

    Parameters
    ----------
    image : torch.Tensor
        ``(B, C, H, W)`` or ``(B, C, D, H, W)``, bool or with values 0 and 1
        only (scikit-image reads any nonzero value as foreground; threshold
        such an image first). It is never modified.
    method : {None, 'zhang', 'lee', 'parallel'}, optional
        ``'zhang'``: Zhang and Suen's parallel thinning, 2-D only.
        ``'lee'``: Lee, Kashyap and Chu's thinning, 2-D and 3-D.
        ``None``: scikit-image's default, ``'zhang'`` in 2-D and ``'lee'``
        in 3-D. ``'parallel'`` (not in scikit-image): a topology-preserving
        thinning in 2-D and 3-D on any device, see Notes.

    Returns
    -------
    torch.Tensor
        Bool skeletons of ``image``'s shape, on its device.

    Notes
    -----
    ``'zhang'`` and ``'lee'`` are exact: each slice equals
    ``skimage.morphology.skeletonize`` of that slice (scikit-image 0.26),
    bit for bit. ``'zhang'`` runs on every device (the same table, the same
    parallel passes, pixels outside the image read as background) and may
    leave simple points (pixels whose removal keeps the topology).
    ``'lee'`` is sequential (its candidates are re-checked one by one): it
    runs on morphaug's native CPU kernel, slices in parallel, and raises
    ``NotImplementedError`` elsewhere (other devices, builds without the
    native library, ``MORPHAUG_BACKEND=torch``). As scikit-image's, it
    deletes small components outright (scikit-image issue #3757).

    ``'parallel'`` follows Lee, Kashyap and Chu's thinning (scikit-image's
    3-D ``'lee'``) with its sequential re-check replaced by 8 subfields of
    a 2 x 2 x 2 partition, whose voxels are never neighbours and are
    deleted together: per border direction, the simple points that are not
    end points are listed, then each subfield deletes those still simple.
    It is deterministic, gives the same result on every device, keeps the
    topology of every slice (26-connected objects, 6-connected background:
    the same components, tunnels and cavities, as
    :func:`morphaug.metrics.betti_numbers` counts them) and leaves no simple
    point that is not an end point. Unlike scikit-image's ``'lee'``, which
    deletes small components, it keeps every component; its skeletons are
    close to ``'lee'``'s but not equal. A 2-D image is thinned as one plane
    (8-connected objects, 4-connected background). Use it where topology
    matters (clDice, Betti errors, skeleton targets).

    The native CPU kernels thin every slice to its fixpoint in one call,
    slices in parallel. On CUDA (and on the torch backend) the batch
    iterates until its slowest slice converges; whether the last iterations
    deleted anything is read on the host every few iterations on an
    accelerator (every iteration on the CPU).

    See Also
    --------
    skimage.morphology.skeletonize

    Examples
    --------
    >>> import torch
    >>> from morphaug.morphology import skeletonize
    >>> image = torch.zeros(1, 1, 7, 5, dtype=torch.bool)
    >>> image[0, 0, 1:6, 1:4] = True
    >>> skeletonize(image)[0, 0].int()
    tensor([[0, 0, 0, 0, 0],
            [0, 0, 1, 0, 0],
            [0, 0, 1, 0, 0],
            [0, 0, 1, 0, 0],
            [0, 0, 0, 0, 0],
            [0, 0, 0, 0, 0],
            [0, 0, 0, 0, 0]], dtype=torch.int32)
    """
    if method is not None and (not isinstance(method, str) or method not in METHODS):
        raise ValueError(f"method must be None or one of {sorted(METHODS)}, got {method!r}")
    image = binary_image(image)
    rank = image.ndim - 2
    if method is None:
        method = "zhang" if rank == 2 else "lee"
    if rank not in METHODS[method]:
        raise ValueError(f"method={method!r} works on images of {METHODS.get(method, ())} spatial axes only, got "
                         f"image of shape {tuple(image.shape)}")
    if method == "zhang":
        return _thinning.zhang(image)
    volume = image[:, :, None] if rank == 2 else image  # a 2-D image is one plane
    skeleton = _LEE(volume, volume) if method == "lee" else _parallel.thin_parallel(volume)
    return skeleton[:, :, 0] if rank == 2 else skeleton


@opaque_under_compile(one_result("image", lambda kw: torch.bool))
def thin(image, max_num_iter=None):
    """Morphological thinning of every ``(b, c)`` slice (``skimage.morphology.thin``).

    Parameters
    ----------
    image : torch.Tensor
        ``(B, C, H, W)``, bool or with values 0 and 1 only (scikit-image
        reads any nonzero value as foreground; threshold such an image
        first). It is never modified.
    max_num_iter : int, optional
        The most iterations (of two sub-iterations each); thinning stops
        earlier when an iteration deletes nothing. ``None`` or ``0`` (as in
        scikit-image): no limit.

    Returns
    -------
    torch.Tensor
        Bool thinned images of ``image``'s shape, on its device.

    Notes
    -----
    Parity: each slice equals ``skimage.morphology.thin`` of that slice
    (scikit-image 0.26; Guo and Hall's two sub-iterations), bit for bit, on
    every device. Convergence is found as in :func:`skeletonize`.

    See Also
    --------
    skimage.morphology.thin

    Examples
    --------
    >>> import torch
    >>> from morphaug.morphology import thin
    >>> image = torch.zeros(1, 1, 5, 5, dtype=torch.bool)
    >>> image[0, 0, 1:4, 1:4] = True
    >>> thin(image)[0, 0].int()
    tensor([[0, 0, 0, 0, 0],
            [0, 0, 0, 0, 0],
            [0, 0, 1, 0, 0],
            [0, 0, 0, 0, 0],
            [0, 0, 0, 0, 0]], dtype=torch.int32)
    """
    if max_num_iter is not None:
        max_num_iter = check_host_int(max_num_iter, "max_num_iter", minimum=0) or None
    return _thinning.guo_hall(binary_image(image, ranks=(2,)), max_num_iter)
