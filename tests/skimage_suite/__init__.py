"""scikit-image's own tests of ``find_boundaries`` (and ``mark_boundaries``), ``expand_labels``,
``euler_number`` and ``measure.label``, run against morphaug (a package, so that its conftest does not
shadow ``tests/conftest.py``).

The ``test_*.py`` files are scikit-image's, from its tag v0.26.0 (the version installed here; the
installed package does not ship its tests): ``tests/skimage/segmentation/test_boundaries.py`` and
``test_expand_labels.py``, ``tests/skimage/measure/test_ccomp.py``, and, as ``test_euler_number.py``,
the test of that name in ``tests/skimage/measure/test_regionprops.py`` with the arrays it reads
(BSD-3-Clause: LICENSE.txt). Their imports of the functions under test now take ``_facade``'s;
``conftest.py`` also puts those into scikit-image's modules, so that its ``mark_boundaries`` and
``regionprops`` call morphaug, marks the known difference and leaves out a test of a private helper.
"""
