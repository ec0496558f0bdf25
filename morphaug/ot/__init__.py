"""POT's entropic optimal transport on batched tensors, on any device.

Every function solves a batch of independent problems at once, on the
inputs' device, with POT's iterations and stopping rules (parity to
rounding), for data-augmentation pipelines and losses.

sinkhorn
    Entropic OT between histograms ``a (B, n)`` and ``b (B, m)`` with a shared
    ``(n, m)`` or per-problem ``(B, n, m)`` cost (``ot.sinkhorn`` /
    ``ot.sinkhorn2``); the transport cost is differentiable.
SinkhornLoss
    ``sinkhorn``'s transport cost as an ``nn.Module``.
grid_sinkhorn
    The same for histograms on regular 2-D/3-D grids with the squared
    Euclidean cost, never forming the cost matrix (separable kernels).
wasserstein_barycenter
    Entropic barycenters of histograms on grids
    (``ot.bregman.convolutional_barycenter2d``), batched.

Conventions: histograms are non-negative with equal total mass within a
problem (balanced OT); inputs are float32 or float64 (half precision is
computed in float32), never modified; bad inputs raise ``TypeError`` or
``ValueError`` naming the argument. Grid coordinates default to ``[0, 1]``
per axis, as in POT.
"""

from ._grid import grid_sinkhorn, wasserstein_barycenter
from ._iterations import SinkhornResult
from ._sinkhorn import SinkhornLoss, sinkhorn

__all__ = ["sinkhorn", "SinkhornResult", "SinkhornLoss", "grid_sinkhorn", "wasserstein_barycenter"]
