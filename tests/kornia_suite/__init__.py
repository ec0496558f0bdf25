"""Kornia's own tests of ``kornia.morphology``, ``connected_components`` and ``distance_transform``,
run against morphaug's drop-ins (a package, so that its conftest does not shadow ``tests/conftest.py``).

The ``test_*.py`` files are Kornia's (github.com/kornia/kornia at b4f5a78a1, its newest snapshot
here; Apache-2.0, headers kept) with one line changed each: ``from kornia.morphology import X``
became ``from morphaug.adapters.kornia.morphology import X``, and ``import kornia`` became
``from ._facade import kornia`` (Kornia with ``contrib``'s three functions from morphaug).
``testing/`` is Kornia's test helpers from the same commit, unchanged (installed Kornia does not
ship them), imported under their own name ``testing`` by ``conftest.py``.
"""
