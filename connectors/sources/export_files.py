"""Named files of an export, from a folder or a .zip in the tenant's import folder (Confluence, Jira and GitHub
exports). Every read is capped at UPLOAD_MAX_FILE_BYTES; a name never leaves the export (no "..", no symlinks).
A file too big to hold (Confluence's entities.xml) is opened as a stream with a cap of its own (`stream`)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from django.conf import settings

from .base import ConnectorError


class ExportFiles:
    def __init__(self, target: Path) -> None:
        self.target = target
        try:
            self.archive = zipfile.ZipFile(target) if target.is_file() and target.suffix.lower() == ".zip" else None
        except (zipfile.BadZipFile, OSError) as exc:  # a truncated upload, or not a zip at all: say so
            raise ConnectorError(f"the export {target.name} is not a readable .zip file ({exc})") from exc
        if self.archive is None and not target.is_dir():
            raise ConnectorError("the path must be an export folder or a .zip file")

    def _locate(self, name: str) -> zipfile.ZipInfo | Path | None:
        """The zip member or file named `name`, None when absent or when the name would leave the export."""
        parts = PurePosixPath(name).parts
        if ".." in parts or name.startswith("/"):
            return None
        if self.archive is not None:
            try:
                return self.archive.getinfo(name)
            except KeyError:
                return None
        path = self.target / name
        return path if path.is_file() and not path.is_symlink() else None

    def _open(self, found: zipfile.ZipInfo | Path, cap: int) -> BinaryIO:
        if isinstance(found, zipfile.ZipInfo):
            if found.file_size > cap:
                raise ValueError(f"over the size limit ({found.file_size:,} bytes)")
            return self.archive.open(found)
        return found.open("rb")

    def has(self, name: str) -> bool:
        return self._locate(name) is not None

    def read(self, name: str) -> bytes | None:
        """The file's bytes, None when absent. Raises ValueError past the size limit."""
        found = self._locate(name)
        if found is None:
            return None
        cap = settings.UPLOAD_MAX_FILE_BYTES
        with self._open(found, cap) as handle:
            data = handle.read(cap + 1)
        if len(data) > cap:
            raise ValueError("over the size limit")
        return data

    def stream(self, name: str, cap: int) -> BinaryIO | None:
        """The file opened for reading in pieces, None when absent. Raises ValueError (when opened, or while read)
        once it passes `cap` bytes: a zip member's declared size is checked first, then what it really inflates to."""
        found = self._locate(name)
        if found is None:
            return None
        return io.BufferedReader(_Capped(self._open(found, cap), cap), buffer_size=256 * 1024)

    def names(self, folder: str) -> list[str]:
        """File names (not paths) directly inside `folder`, sorted."""
        if self.archive is not None:
            prefix = folder.rstrip("/") + "/"
            found = [n[len(prefix):] for n in self.archive.namelist() if n.startswith(prefix)]
            return sorted(n for n in found if n and "/" not in n)
        path = self.target / folder
        if not path.is_dir() or path.is_symlink():
            return []
        return sorted(p.name for p in path.iterdir() if p.is_file() and not p.is_symlink())

    def folders(self, folder: str) -> list[str]:
        """Sub-folder names directly inside `folder`, sorted."""
        if self.archive is not None:
            prefix = folder.rstrip("/") + "/"
            found = {n[len(prefix):].split("/", 1)[0] for n in self.archive.namelist()
                     if n.startswith(prefix) and "/" in n[len(prefix):]}
            return sorted(found)
        path = self.target / folder
        if not path.is_dir() or path.is_symlink():
            return []
        return sorted(p.name for p in path.iterdir() if p.is_dir() and not p.is_symlink())

    def json(self, name: str, *, required: bool = True):
        """The parsed JSON of `name` (None when absent and not required). Raises ConnectorError."""
        try:
            raw = self.read(name)
        except ValueError as exc:
            raise ConnectorError(f"{name}: {exc}") from exc
        if raw is None:
            if required:
                raise ConnectorError(f"the export has no {name}")
            return None
        try:
            return json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ConnectorError(f"{name} is not valid JSON") from exc


class _Capped(io.RawIOBase):
    """A read-only stream that raises ValueError once more than `cap` bytes came through (a zip member's header
    may understate what it inflates to)."""

    def __init__(self, handle: BinaryIO, cap: int) -> None:
        super().__init__()
        self.handle, self.cap, self.total = handle, cap, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        count = self.handle.readinto(buffer)
        self.total += count or 0
        if self.total > self.cap:
            raise ValueError(f"over the size limit ({self.cap:,} bytes)")
        return count

    def close(self) -> None:
        if not self.closed:
            self.handle.close()
        super().close()


def results_of(data, name: str) -> list:
    """A REST listing as exported: a bare list, or a page of it ({"results": [...]} / {"issues": [...]})."""
    if isinstance(data, dict):
        data = data.get("results", data.get("issues", data.get("values")))
    if not isinstance(data, list):
        raise ConnectorError(f"{name} must hold a list (or a REST page with results)")
    return data
