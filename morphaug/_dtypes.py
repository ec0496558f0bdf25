"""torch's unsigned dtypes wider than 8 bits (uint16, uint32, uint64: 16-bit TIFFs and label maps), which
it stores, compares for equality and indexes, but neither orders, subtracts, flips nor copies by index:
the ways round that, in one place."""

from __future__ import annotations

import torch

__all__ = ["SIGNED_VIEW", "on_signed_view", "positive"]

#: The signed dtype of the same width as each unsigned one that torch's arithmetic skips.
SIGNED_VIEW = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}


def on_signed_view(fn, *xs: torch.Tensor) -> torch.Tensor:
    """``fn`` of tensors of one dtype, run on their signed view where it is one of :data:`SIGNED_VIEW`'s
    (the same bits, two's complement: NumPy's wrap-around for sums, differences and bit flips) and
    viewed back."""
    signed = SIGNED_VIEW.get(xs[0].dtype)
    return fn(*xs) if signed is None else fn(*(x.view(signed) for x in xs)).view(xs[0].dtype)


def positive(image: torch.Tensor) -> torch.Tensor:
    """The voxels of ``image`` above 0 (scikit-image's ``image > 0`` of a label image) as a bool mask;
    those of an unsigned dtype are its nonzero ones, which is how they are found where torch does not
    order the dtype."""
    if image.dtype == torch.bool:
        return image
    return image > 0 if image.dtype.is_signed else image != 0
