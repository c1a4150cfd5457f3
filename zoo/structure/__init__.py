"""Automatic structure search over the kernel grammar (Duvenaud 2014, ch. 3 and App. C;
docs/sources/duvenaud.md#grammar).

- ``canonical``: one canonical form per sum of products, so ``SE + Lin`` and ``Lin + SE`` are one candidate.
- ``grammar``: the operators C.1-C.11 and ``expand(kernel)``, every candidate once.

Kept import-light: the search itself lives in ``inference.applications.structure_search``.
"""
