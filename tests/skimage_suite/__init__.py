"""scikit-image's own tests of the functions morphaug mirrors with native kernels (``find_boundaries``,
``expand_labels``, ``euler_number``, ``measure.label``), run against morphaug (a package, so that its conftest does not
shadow ``tests/conftest.py``).

The ``test_*.py`` files are scikit-image's (github.com/scikit-image/scikit-image at its tag v0.26.0,
the version installed here; BSD-3-Clause, notice kept; ``conftest.py`` marks the known difference and
leaves out a test of a private helper) from ``tests/skimage/segmentation/
test_boundaries.py``, ``test_expand_labels.py``, ``tests/skimage/measure/test_ccomp.py`` and, for
``test_euler_number.py``, the test of that
name in ``tests/skimage/measure/test_regionprops.py`` with the arrays it reads. Their imports of the
functions under test were changed to ``._facade``'s (scikit-image's own functions, so that
``mark_boundaries`` and ``regionprops`` reach morphaug through them): the installed scikit-image
does not ship its tests.
"""
