"""Benchmarks of the knowledge app, run by `manage.py bench_all` (all areas) or `bench_ingest`.
Product modules never import this package (tests/test_bench_separation.py)."""
