"""Benchmarks of the findings app (`claims`: grounding audit and consolidation), run by `manage.py bench_all`.
Product modules never import this package (tests/test_bench_separation.py)."""
