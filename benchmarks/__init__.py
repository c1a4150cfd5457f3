"""Benchmark suites, the runner (serial or Dask), the results store and the report."""
