"""Segmentation losses: MONAI's distance-transform and soft clDice losses, and Skeleton Recall's loss.

HausdorffDTLoss
    Karimi & Salcudean's Hausdorff loss by distance transforms
    (``monai.losses.HausdorffDTLoss``).
LogHausdorffDTLoss
    Its logarithm, ``log(loss + 1)`` (``monai.losses.LogHausdorffDTLoss``).
BoundaryLoss
    Kervadec et al.'s boundary loss: the predicted probabilities weighted by
    the target's signed distance map (``monai.losses.BoundaryLoss``).
SoftclDiceLoss
    Shit et al.'s soft centreline Dice, on soft skeletons made by min/max
    pooling (``monai.losses.SoftclDiceLoss``).
SoftDiceclDiceLoss
    Soft Dice and soft clDice, weighted (``monai.losses.SoftDiceclDiceLoss``).
SkeletonRecallLoss
    Kirchhoff et al.'s Skeleton Recall: the soft recall of the target's
    skeleton (nnU-Net's ``SoftSkeletonRecallLoss``).

All are ``torch.nn.Module``s, differentiable in the prediction; the MONAI
ones have the signature and semantics of MONAI 1.6's class of the same name
(the same values and gradients). The distance maps are constants, made
without grad by one ``morphaug.ndimage.distance_transform_edt`` call for
every slice of the batch on the input's device (MONAI: a loop over samples
with SciPy, and a host check per slice). Inputs are never modified.
"""

from ._distance import BoundaryLoss, HausdorffDTLoss, LogHausdorffDTLoss
from ._skeleton import SkeletonRecallLoss, SoftclDiceLoss, SoftDiceclDiceLoss

__all__ = ["BoundaryLoss", "HausdorffDTLoss", "LogHausdorffDTLoss", "SoftclDiceLoss", "SoftDiceclDiceLoss",
           "SkeletonRecallLoss"]
