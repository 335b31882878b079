"""Moving the reader to and from a GPU machine (training.reader.device): the parts it comes back in are joined
only when every one arrived whole, and the carried files are used only when they match their manifest. Plain
Python: no torch needed."""

from __future__ import annotations

import json
import os

import pytest

from training.reader import device


def test_a_payload_split_into_parts_joins_back_byte_for_byte(tmp_path, monkeypatch):
    monkeypatch.setattr(device, "PART_BYTES", 1000)
    payload = os.urandom(2500)
    parts = device.parts_write(payload, tmp_path, "reader.bin")
    assert [p["name"] for p in parts] == ["reader.bin.part0", "reader.bin.part1", "reader.bin.part2"]
    assert [(tmp_path / p["name"]).stat().st_size for p in parts] == [1000, 1000, 500]
    assert device.parts_read(tmp_path, parts) == payload


def test_parts_of_an_earlier_result_are_replaced_not_mixed_in(tmp_path, monkeypatch):
    monkeypatch.setattr(device, "PART_BYTES", 1000)
    device.parts_write(os.urandom(3500), tmp_path, "reader.bin")
    parts = device.parts_write(b"short", tmp_path, "reader.bin")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reader.bin.part0"]
    assert device.parts_read(tmp_path, parts) == b"short"


def test_a_part_cut_short_in_transfer_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(device, "PART_BYTES", 1000)
    parts = device.parts_write(os.urandom(2500), tmp_path, "reader.bin")
    (tmp_path / "reader.bin.part1").write_bytes(os.urandom(999))
    with pytest.raises(SystemExit, match="reader.bin.part1"):
        device.parts_read(tmp_path, parts)


def test_carried_files_must_match_their_manifest(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.json.gz").write_bytes(b"squad")
    manifest = {"files": {"data/train.json.gz": device.sha256_of(tmp_path / "data" / "train.json.gz")}}
    (tmp_path / device.MANIFEST).write_text(json.dumps(manifest))
    assert device.manifest_check(tmp_path) == manifest
    (tmp_path / "data" / "train.json.gz").write_bytes(b"squat")
    with pytest.raises(SystemExit, match="train.json.gz"):
        device.manifest_check(tmp_path)


def test_the_recipe_runs_the_passage_edits_after_the_first_stage():
    from training.reader.examples import MIXES

    assert [mix for mix, _ in device.STAGES] == ["base", "inside"]
    assert all(mix in MIXES and epochs > 0 for mix, epochs in device.STAGES)
