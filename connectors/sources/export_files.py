"""Named files of an export, from a folder, a .zip or a tar archive (`.tar`, `.tar.gz`/`.tgz`, `.tar.bz2`,
`.tar.xz`) in the tenant's import folder (Confluence, Jira, GitHub and Slack exports). Every read is capped at
UPLOAD_MAX_FILE_BYTES; a name never leaves the export (no "..", no symlinks).

Archives are read in place, never extracted. A tar is indexed once (its member headers, one pass through the
decompressed stream) and each file is then read from its offset: reading files in archive order costs about one
more pass, so an archive that also holds big git data is slow to open but never held in memory. A tar holding an
absolute path, a ".." component, a link or a device is refused as a whole (ConnectorError): no export we read is
made that way, and the tools an admin would use to look inside it would write outside their folder. (A .zip's
odd names are simply unreachable: `read` never resolves them.) A file too big to hold (Confluence's
entities.xml) is opened as a stream with a cap of its own (`stream`).
"""

from __future__ import annotations

import io
import json
import lzma
import re
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from django.conf import settings

from .base import ConnectorError

TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
# What a damaged or truncated compressed tar raises, by layer (tar headers, gzip, bzip2, xz).
_TAR_ERRORS = (tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError)


def _member_name(raw: str) -> str | None:
    """A tar member's name relative to the archive root ("./" dropped); None when it would leave the root
    (absolute, a drive letter, a ".." component, with either kind of slash)."""
    if raw.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", raw):
        return None
    parts = [p for p in re.split(r"[/\\]", raw) if p not in ("", ".")]
    return None if ".." in parts else "/".join(parts)


def _tar_index(target: Path) -> tuple[tarfile.TarFile, dict[str, tarfile.TarInfo]]:
    """The open archive and its regular files by name. Raises ConnectorError for an unreadable or unsafe tar."""
    try:
        archive = tarfile.open(target, mode="r:*")
    except _TAR_ERRORS as exc:
        raise ConnectorError(f"the export {target.name} is not a readable tar archive ({exc})") from exc
    try:
        members = archive.getmembers()
        files: dict[str, tarfile.TarInfo] = {}
        for member in members:
            name = _member_name(member.name)
            if name is None:
                raise ConnectorError(f"the export {target.name} holds {member.name[:200]!r}, a path that leaves "
                                     "the archive: the archive is refused")
            if member.issym() or member.islnk():
                raise ConnectorError(f"the export {target.name} holds a link ({member.name[:200]!r}): the archive "
                                     "is refused")
            if member.isfile() and name:
                files[name] = member
            elif not member.isdir():
                raise ConnectorError(f"the export {target.name} holds {member.name[:200]!r}, neither a file nor a "
                                     "folder: the archive is refused")
    except _TAR_ERRORS as exc:
        archive.close()
        raise ConnectorError(f"the export {target.name} is not a readable tar archive ({exc})") from exc
    except ConnectorError:
        archive.close()
        raise
    return archive, files


def _prefix(folder: str) -> str:
    folder = folder.strip("/")
    return "" if folder in ("", ".") else folder + "/"


class ExportFiles:
    def __init__(self, target: Path) -> None:
        self.target = target
        self.archive: zipfile.ZipFile | None = None  # a .zip (a tar is read through `_tar`)
        self._tar: tarfile.TarFile | None = None
        self._tar_files: dict[str, tarfile.TarInfo] = {}
        lower = target.name.lower()
        if target.is_file() and lower.endswith(".zip"):
            try:
                self.archive = zipfile.ZipFile(target)
            except (zipfile.BadZipFile, OSError) as exc:  # a truncated upload, or not a zip at all: say so
                raise ConnectorError(f"the export {target.name} is not a readable .zip file ({exc})") from exc
        elif target.is_file() and lower.endswith(TAR_SUFFIXES):
            self._tar, self._tar_files = _tar_index(target)
        elif not target.is_dir():
            raise ConnectorError("the path must be an export folder, a .zip or a .tar.gz file")

    def close(self) -> None:
        for handle in (self.archive, self._tar):
            if handle is not None:
                handle.close()

    def __enter__(self) -> ExportFiles:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _locate(self, name: str) -> zipfile.ZipInfo | tarfile.TarInfo | Path | None:
        """The archive member or file named `name`, None when absent or when the name would leave the export."""
        parts = PurePosixPath(name).parts
        if ".." in parts or name.startswith("/"):
            return None
        if self._tar is not None:
            return self._tar_files.get(name)
        if self.archive is not None:
            try:
                return self.archive.getinfo(name)
            except KeyError:
                return None
        path = self.target / name
        return path if path.is_file() and not path.is_symlink() else None

    def _open(self, found: zipfile.ZipInfo | tarfile.TarInfo | Path, cap: int) -> BinaryIO:
        if isinstance(found, zipfile.ZipInfo):
            if found.file_size > cap:
                raise ValueError(f"over the size limit ({found.file_size:,} bytes)")
            return self.archive.open(found)
        if isinstance(found, tarfile.TarInfo):
            if found.size > cap:
                raise ValueError(f"over the size limit ({found.size:,} bytes)")
            try:
                handle = self._tar.extractfile(found)
            except _TAR_ERRORS as exc:
                raise ValueError(f"the archive breaks inside it ({exc})") from exc
            if handle is None:
                raise ValueError("not a regular file")
            return io.BufferedReader(_TarMember(handle))  # buffered: read(n) returns all n bytes, not one chunk
        return found.open("rb")

    def has(self, name: str) -> bool:
        return self._locate(name) is not None

    def read(self, name: str) -> bytes | None:
        """The file's bytes, None when absent. Raises ValueError past the size limit or when the archive's
        stream breaks inside the file."""
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

    def _archive_names(self) -> list[str]:
        if self._tar is not None:
            return list(self._tar_files)
        return self.archive.namelist()

    def names(self, folder: str) -> list[str]:
        """File names (not paths) directly inside `folder` ("" or "." for the export's top level), sorted."""
        if self.archive is not None or self._tar is not None:
            prefix = _prefix(folder)
            found = [n[len(prefix):] for n in self._archive_names() if n.startswith(prefix)]
            return sorted(n for n in found if n and "/" not in n)
        path = self.target / folder
        if not path.is_dir() or path.is_symlink():
            return []
        return sorted(p.name for p in path.iterdir() if p.is_file() and not p.is_symlink())

    def folders(self, folder: str) -> list[str]:
        """Sub-folder names directly inside `folder` ("" or "." for the top level), sorted."""
        if self.archive is not None or self._tar is not None:
            prefix = _prefix(folder)
            found = {n[len(prefix):].split("/", 1)[0] for n in self._archive_names()
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
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: JSON nested too deep
            raise ConnectorError(f"{name} is not valid JSON") from exc


class _TarMember(io.RawIOBase):
    """A tar member's stream whose decompression errors (a truncated or damaged archive) read as ValueError, the
    error every reader here already reports as one unreadable file."""

    def __init__(self, handle: BinaryIO) -> None:
        super().__init__()
        self.handle = handle

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            return self.handle.readinto(buffer)
        except _TAR_ERRORS as exc:
            raise ValueError(f"the archive breaks inside it ({exc})") from exc

    def close(self) -> None:
        if not self.closed:
            self.handle.close()
        super().close()


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
