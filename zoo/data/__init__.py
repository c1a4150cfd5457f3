"""Generators of synthetic data and small bundled real data sets (each with its provenance)."""
