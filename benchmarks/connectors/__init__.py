"""Benchmarks of the connectors app (`manage.py bench_all --only connectors`). Product code never imports this."""
