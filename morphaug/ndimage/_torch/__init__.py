"""The torch backend of ``morphaug.ndimage``: pure-PyTorch algorithms, any device.

One module per family (:mod:`.grey`, :mod:`.binary`, :mod:`.distance`, whose
kernels live in :mod:`.edt`, :mod:`.cdt` and :mod:`.bf`), each vectorised over
the batch and memory bounded. Every public op's dispatch
table (in ``morphaug.ndimage._grey_dispatch``, ``_binary_backends``, ``_propagation``,
``_distance``, ``_label``) ends in one
of these kernels; they are the reference the native kernels are tested
against. They take normalised arguments (``morphaug.ndimage._elements``) and
import nothing from the public modules.
"""
