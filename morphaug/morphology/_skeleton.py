"""``skeletonize`` and ``thin``: scikit-image's skeletons of every ``(b, c)`` slice."""

from __future__ import annotations

from .._checks import check_host_int
from .._images import binary_image
from . import _parallel, _thinning

__all__ = ["METHODS", "skeletonize", "thin"]

#: ``skeletonize``'s methods and the spatial ranks each one takes.
METHODS = {"zhang": (2,), "parallel": (2, 3)}


def skeletonize(image, *, method=None):
    """The skeleton of every ``(b, c)`` slice, by thinning (``skimage.morphology.skeletonize``).

    Parameters
    ----------
    image : torch.Tensor
        ``(B, C, H, W)`` or ``(B, C, D, H, W)``, bool or with values 0 and 1
        only (scikit-image reads any nonzero value as foreground; threshold
        such an image first). It is never modified.
    method : {None, 'zhang', 'parallel'}, optional
        ``'zhang'``: Zhang and Suen's parallel thinning, scikit-image's 2-D
        default, 2-D only. ``'parallel'`` (not in scikit-image): a
        topology-preserving thinning in 2-D and 3-D, see Notes. ``None``:
        ``'zhang'`` in 2-D, ``'parallel'`` in 3-D (scikit-image's 3-D
        default, ``'lee'``, is not available yet: a ``NotImplementedError``).

    Returns
    -------
    torch.Tensor
        Bool skeletons of ``image``'s shape, on its device.

    Notes
    -----
    ``'zhang'`` is exact: each slice equals
    ``skimage.morphology.skeletonize`` of that slice (scikit-image 0.26),
    bit for bit, on every device (the same table, the same parallel passes,
    pixels outside the image read as background). It may leave simple
    points (pixels whose removal keeps the topology).

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

    The batch iterates until its slowest slice converges; whether the last
    iterations deleted anything is read on the host, every iteration on the
    CPU and every few iterations on an accelerator.

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
    if method == "lee":
        raise NotImplementedError("method='lee' (scikit-image's 3-D default) is not available yet: use "
                                  "method='parallel', a topology-preserving thinning close to it")
    if method is not None and method not in METHODS:
        raise ValueError(f"method must be None or one of {sorted(METHODS)}, got {method!r}")
    image = binary_image(image)
    rank = image.ndim - 2
    if method is None:
        method = "zhang" if rank == 2 else "parallel"
    if rank not in METHODS[method]:
        raise ValueError(f"method={method!r} works on images of {METHODS.get(method, ())} spatial axes only, got "
                         f"image of shape {tuple(image.shape)}")
    if method == "zhang":
        return _thinning.zhang(image)
    if rank == 2:
        return _parallel.thin_parallel(image[:, :, None])[:, :, 0]
    return _parallel.thin_parallel(image)


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
    every device. Convergence is read on the host as in :func:`skeletonize`.

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
