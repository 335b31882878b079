"""A renamed setting still reads its former variable, with a warning, so a deployment keeps its value."""

from __future__ import annotations

import warnings

import pytest

from groundwork.env import env_int


def test_the_former_name_is_read_with_a_warning_when_the_new_one_is_unset(monkeypatch):
    monkeypatch.delenv("NEW_LIMIT", raising=False)
    monkeypatch.setenv("OLD_LIMIT", "4096")
    with pytest.warns(FutureWarning, match="OLD_LIMIT is deprecated: set NEW_LIMIT instead"):
        assert env_int("NEW_LIMIT", 1024, minimum=1024, deprecated_alias="OLD_LIMIT") == 4096


def test_the_new_name_wins_and_the_former_one_is_reported_ignored(monkeypatch):
    monkeypatch.setenv("NEW_LIMIT", "2048")
    monkeypatch.setenv("OLD_LIMIT", "4096")
    with pytest.warns(FutureWarning, match="OLD_LIMIT is deprecated and ignored"):
        assert env_int("NEW_LIMIT", 1024, deprecated_alias="OLD_LIMIT") == 2048


def test_a_bad_former_value_names_the_variable_it_came_from(monkeypatch):
    monkeypatch.delenv("NEW_LIMIT", raising=False)
    monkeypatch.setenv("OLD_LIMIT", "12")
    with pytest.warns(FutureWarning), pytest.raises(Exception, match="OLD_LIMIT must be at least 1024"):
        env_int("NEW_LIMIT", 1024, minimum=1024, deprecated_alias="OLD_LIMIT")


def test_nothing_is_said_when_only_the_new_name_is_set(monkeypatch):
    monkeypatch.setenv("NEW_LIMIT", "2048")
    monkeypatch.delenv("OLD_LIMIT", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert env_int("NEW_LIMIT", 1024, deprecated_alias="OLD_LIMIT") == 2048
