"""Benchmarks of the chat app (`answers`) and the security probes of the whole stack (`security`), run by
`manage.py bench_all`. Product modules never import this package (tests/test_bench_separation.py)."""
