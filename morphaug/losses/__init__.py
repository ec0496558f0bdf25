"""MONAI's distance-transform losses, with their distance maps made on the device for the whole batch.

HausdorffDTLoss
    Karimi & Salcudean's Hausdorff loss by distance transforms
    (``monai.losses.HausdorffDTLoss``).
LogHausdorffDTLoss
    Its logarithm, ``log(loss + 1)`` (``monai.losses.LogHausdorffDTLoss``).
BoundaryLoss
    Kervadec et al.'s boundary loss: the predicted probabilities weighted by
    the target's signed distance map (``monai.losses.BoundaryLoss``).

Both are ``torch.nn.Module``s with the signature and semantics of MONAI
1.6's class of the same name (the same values and gradients), differentiable
in the prediction. The distance maps are constants, made without grad by one
``morphaug.ndimage.distance_transform_edt`` call for every slice of the
batch on the input's device (MONAI: a loop over samples with SciPy, and a
host check per slice). Inputs are never modified.
"""

from ._distance import BoundaryLoss, HausdorffDTLoss, LogHausdorffDTLoss

__all__ = ["BoundaryLoss", "HausdorffDTLoss", "LogHausdorffDTLoss"]
