from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    """Only so `manage.py bench_all` and the other bench commands are found; benchmarks have no models."""

    name = "benchmarks"
    label = "benchmarks"
