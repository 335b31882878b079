import pytest

from groundwork.checks import database_extensions_check, extension_problems


@pytest.mark.django_db
def test_real_database_passes_the_extension_check():
    assert database_extensions_check() == []


def test_missing_vector_is_named():
    problems = extension_problems({"btree_gist": ("1.8", "1.8")}, can_create=True)
    assert len(problems) == 1 and "vector" in problems[0] and "not available" in problems[0]


def test_old_vector_is_named_with_the_minimum():
    problems = extension_problems({"vector": ("0.7.4", "0.7.4"), "btree_gist": ("1.8", None)}, can_create=True)
    assert problems == ["extension vector is installed at 0.7.4, but Groundwork needs ≥ 0.8; "
                        "run ALTER EXTENSION vector UPDATE"]


def test_uncreatable_extension_is_named():
    problems = extension_problems({"vector": ("0.8.0", None), "btree_gist": ("1.7", "1.7")}, can_create=False)
    assert len(problems) == 1 and "CREATE EXTENSION vector" in problems[0]


def test_all_present_is_clean():
    assert extension_problems({"vector": ("0.8.1", "0.8.1"), "btree_gist": ("1.7", None)}, can_create=True) == []
