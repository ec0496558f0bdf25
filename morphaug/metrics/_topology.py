"""Topology metrics on ``(B, C, *spatial)`` masks: centreline Dice and Betti numbers."""

from __future__ import annotations

import torch

from .. import measure, morphology, ndimage
from .._checks import check_host_int
from .._images import binary_image

__all__ = ["cl_dice", "betti_numbers", "betti_errors"]


def _pair(pred, ref) -> tuple[torch.Tensor, torch.Tensor]:
    pred, ref = binary_image(pred, "pred"), binary_image(ref, "ref")
    if pred.shape != ref.shape:
        raise ValueError(f"pred and ref must have the same shape, got {tuple(pred.shape)} and {tuple(ref.shape)}")
    if pred.device != ref.device:
        raise ValueError(f"pred and ref must be on the same device, got {pred.device} and {ref.device}")
    return pred, ref


def cl_dice(pred, ref, *, method=None):
    """Centreline Dice (clDice) of every ``(b, c)`` slice, with exact skeletons.

    The harmonic mean of the topology precision ``|S(pred) & ref| / |S(pred)|``
    and the topology sensitivity ``|S(ref) & pred| / |S(ref)|``, ``S`` being
    :func:`morphaug.morphology.skeletonize` (Shit et al., CVPR 2021).

    Parameters
    ----------
    pred, ref : torch.Tensor
        ``(B, C, H, W)`` or ``(B, C, D, H, W)`` masks of the same shape and
        device, bool or with values 0 and 1 only. They are never modified.
    method : str, optional
        The skeleton's ``method`` (:func:`morphaug.morphology.skeletonize`):
        by default scikit-image's (``'zhang'`` in 2-D, ``'lee'`` in 3-D, the
        authors' choice; ``'lee'`` runs on the CPU only). ``'parallel'``
        keeps the topology of the masks, on any device.

    Returns
    -------
    torch.Tensor
        ``torch.float32`` of shape ``(B, C)``: nan where a skeleton is empty
        (a ratio of 0 / 0, as the authors' NumPy code gives), 0 where both
        ratios are 0.

    See Also
    --------
    monai.losses.SoftclDiceLoss : the soft (differentiable) version.

    Examples
    --------
    >>> import torch
    >>> from morphaug.metrics import cl_dice
    >>> ref = torch.zeros(1, 1, 7, 7, dtype=torch.bool)
    >>> ref[0, 0, 3, 1:6] = True
    >>> cl_dice(ref, ref), cl_dice(ref, ref.transpose(-1, -2))
    (tensor([[1.]]), tensor([[0.2000]]))
    """
    pred, ref = _pair(pred, ref)
    skeletons = morphology.skeletonize(torch.cat([pred, ref], 1), method=method).flatten(2)
    pred_skeleton, ref_skeleton = skeletons.chunk(2, 1)
    precision = (pred_skeleton & ref.flatten(2)).sum(-1) / pred_skeleton.sum(-1)
    sensitivity = (ref_skeleton & pred.flatten(2)).sum(-1) / ref_skeleton.sum(-1)
    score = 2 * precision * sensitivity / (precision + sensitivity)
    return torch.where((precision == 0) & (sensitivity == 0), 0.0, score).float()


def betti_numbers(mask, connectivity=None):
    """The Betti numbers of every ``(b, c)`` slice: components, holes (tunnels in 3-D) and cavities.

    Parameters
    ----------
    mask : torch.Tensor
        ``(B, C, H, W)`` or ``(B, C, D, H, W)``, bool or with values 0 and 1
        only. It is never modified.
    connectivity : int, optional
        The foreground's connectivity, as in
        :func:`morphaug.measure.euler_number`: 1 or 2 in 2-D, 1 or 3 in 3-D
        (default: full); the background takes the complementary one (8/4 in
        2-D, 26/6 in 3-D).

    Returns
    -------
    torch.Tensor
        ``torch.int64`` of shape ``(B, C, S)`` for ``S`` spatial axes:
        ``beta_0`` (foreground components), ``beta_1`` (holes in 2-D, tunnels
        in 3-D) and, in 3-D, ``beta_2`` (cavities: background components
        enclosed by the foreground).

    Notes
    -----
    ``beta_0`` comes from :func:`morphaug.ndimage.label` of the foreground,
    ``beta_2`` from labelling the background of the zero-padded mask (less
    the outside), and ``beta_1`` from the Euler number
    (:func:`morphaug.measure.euler_number`), ``chi = beta_0 - beta_1 +
    beta_2``. One call for the whole batch; nothing is read back.

    Examples
    --------
    >>> import torch
    >>> from morphaug.metrics import betti_numbers
    >>> ring = torch.ones(1, 1, 3, 3, dtype=torch.bool)
    >>> ring[0, 0, 1, 1] = False
    >>> betti_numbers(ring)
    tensor([[[1, 1]]])
    """
    mask = binary_image(mask, "mask")
    rank = mask.ndim - 2
    if connectivity is None:
        connectivity = rank
    connectivity = check_host_int(connectivity, "connectivity", minimum=1)
    euler = measure.euler_number(mask, connectivity)  # checks connectivity's range
    components = ndimage.label(mask, ndimage.generate_binary_structure(rank, connectivity))[1]
    if rank == 2:
        return torch.stack([components, components - euler], -1)
    background = ~torch.nn.functional.pad(mask, (1, 1) * rank)
    cavities = ndimage.label(background, ndimage.generate_binary_structure(rank, 4 - connectivity))[1] - 1
    return torch.stack([components, components + cavities - euler, cavities], -1)


def betti_errors(pred, ref, connectivity=None):
    """The absolute differences of the Betti numbers of ``pred`` and ``ref``, per ``(b, c)`` slice.

    Parameters
    ----------
    pred, ref : torch.Tensor
        Masks of the same shape and device, as for :func:`betti_numbers`.
    connectivity : int, optional
        As for :func:`betti_numbers`.

    Returns
    -------
    torch.Tensor
        ``torch.int64`` of shape ``(B, C, S)``: ``|beta_i(pred) - beta_i(ref)|``.

    Examples
    --------
    >>> import torch
    >>> from morphaug.metrics import betti_errors
    >>> ring = torch.ones(1, 1, 3, 3, dtype=torch.bool)
    >>> disk = ring.clone()
    >>> ring[0, 0, 1, 1] = False
    >>> betti_errors(ring, disk)
    tensor([[[0, 1]]])
    """
    pred, ref = _pair(pred, ref)
    both = betti_numbers(torch.cat([pred, ref], 1), connectivity)
    return (both[:, :pred.shape[1]] - both[:, pred.shape[1]:]).abs()
