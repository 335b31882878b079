"""A folder or a zip in the tenant's import folder: every file the upload surface reads becomes documents
through knowledge's own readers (knowledge.files) and, for a zip, the upload's own zip checks
(knowledge.uploads.zip_expand: member count, sizes, ratio, paths, links, encryption, nested zips).

Access: a sidecar file `.groundwork-acl.json` at the folder's (or zip's) top maps path prefixes to access,
`{"hr/": {"visibility": "restricted", "acl": ["group:hr", "okta:people"]}, "": {...}}`; the longest prefix
of a file's path wins. Files no rule matches take the record's own access (JSON records may carry one) or
else the source's defaults. A permission sync re-reads only the sidecar.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from knowledge.files import FileRefused, file_kind, file_parse_isolated, file_size_check
from knowledge.models import Visibility
from knowledge.uploads import ZipRefused, zip_expand

from .base import (
    Access,
    ConnectorError,
    PermissionSnapshot,
    RecordError,
    SlimListing,
    SourceConnector,
    SourceRecord,
    path_inside,
)

SIDECAR = ".groundwork-acl.json"


def _rules_parse(raw: bytes | None) -> dict[str, Access]:
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: JSON nested too deep
        raise ConnectorError(f"{SIDECAR} is not valid JSON") from exc
    if not isinstance(data, dict):
        raise ConnectorError(f"{SIDECAR} must map path prefixes to {{visibility, acl}}")
    rules = {}
    for prefix, entry in data.items():
        if not isinstance(entry, dict):
            raise ConnectorError(f"{SIDECAR}: the rule for {prefix!r} must be an object")
        visibility = entry.get("visibility", Visibility.RESTRICTED)
        acl = entry.get("acl", [])
        if visibility not in Visibility.values or not isinstance(acl, list) or not all(
                isinstance(a, str) for a in acl):
            raise ConnectorError(f"{SIDECAR}: the rule for {prefix!r} needs a visibility and a list of principals")
        rules[prefix.strip().lstrip("/")] = Access(visibility=visibility, acl=tuple(acl))
    return rules


def _rule_for(rules: Mapping[str, Access], path: str) -> str | None:
    matches = [prefix for prefix in rules if path.startswith(prefix)]
    return max(matches, key=len) if matches else None


class FolderConnector(SourceConnector):
    kind = "folder"

    def _target(self) -> Path:
        return path_inside(self.root, self.settings.get("path", ""))

    def _is_zip(self, target: Path) -> bool:
        return target.is_file() and target.suffix.lower() == ".zip"

    def _sidecar(self, target: Path) -> bytes | None:
        if self._is_zip(target):
            with zipfile.ZipFile(target) as archive:
                names = set(archive.namelist())
                return archive.read(SIDECAR) if SIDECAR in names else None
        path = target / SIDECAR
        return path.read_bytes() if path.is_file() else None

    def permissions(self) -> PermissionSnapshot:
        rules = _rules_parse(self._sidecar(self._target()))

        def resolve(metadata: Mapping) -> Access | None:
            prefix = _rule_for(rules, str(metadata.get("path", "")))
            if prefix is not None:
                return rules[prefix]
            # No rule: a JSON record's own access stays; everything else follows the source's defaults.
            return None if metadata.get("access_from") == "record" else Access()

        return PermissionSnapshot(resolve=resolve, scopes=len(rules))

    def _paths(self, target: Path) -> list[Path]:
        if not target.is_dir():
            raise ConnectorError("the path must be a folder or a .zip file")
        return [path for path in sorted(target.rglob("*")) if not path.is_dir() and not any(
            part.startswith(".") for part in path.relative_to(target).as_posix().split("/"))]

    def _files(self, target: Path) -> Iterator[tuple[str, bytes | None, str]]:
        """(relative path, bytes or None, refusal reason) of each file the listing has not committed yet: one
        unit per file, begun before the file is read, so a resumed run reads none of the committed ones."""
        if self._is_zip(target):
            try:
                planned = zip_expand(target.name, target.read_bytes())
            except ZipRefused as refused:
                raise ConnectorError(f"{target.name}: {refused.reason}") from refused
            for item in planned:
                if item.name.rsplit("/", 1)[-1].startswith(".") or not self.unit(item.name):
                    continue
                yield item.name, item.content, item.reason
            return
        root = target.resolve()
        for path in self._paths(target):
            relative = path.relative_to(target).as_posix()
            stat = path.lstat()
            # Sorted by path, so the path orders the units; the key names the file's version too.
            if not self.unit(f"{relative}:{stat.st_size}:{stat.st_mtime_ns}", order=path.relative_to(target).parts):
                continue
            if path.is_symlink() or root not in path.resolve().parents:
                yield relative, None, "refused: a symbolic link or a file outside the folder"
            elif file_kind(relative) is None:
                yield relative, None, "unsupported file type"
            else:
                try:
                    file_size_check(path.stat().st_size)
                    data = path.read_bytes()
                except FileRefused as refused:
                    yield relative, None, refused.reason
                except OSError as exc:
                    yield relative, None, f"unreadable file ({type(exc).__name__})"
                else:
                    yield relative, data, ""

    def slim_listing(self) -> SlimListing:
        """The files the folder or zip holds, by name only (nothing read but the zip's directory): a file's
        scope is its path, so every document of a listed file is kept and those of a removed file go."""
        target = self._target()
        if self._is_zip(target):
            with zipfile.ZipFile(target) as archive:
                names = [n for n in archive.namelist() if not n.endswith("/")
                         and not n.rsplit("/", 1)[-1].startswith(".")]
        else:
            names = [path.relative_to(target).as_posix() for path in self._paths(target)]
        return SlimListing(scopes=set(names))

    def records(self) -> Iterator[SourceRecord | RecordError]:
        target = self._target()
        rules = _rules_parse(self._sidecar(target))
        for relative, data, reason in self._files(target):
            # A file's scope is its path: a file that fails protects every document it held (a JSON records file
            # holds several) from being taken for deleted.
            scope = relative
            if data is None:
                yield RecordError(item=relative, reason=reason, external_id=relative, scope=relative)
                continue
            try:
                parsed = file_parse_isolated(relative, data)
            except FileRefused as refused:
                yield RecordError(item=relative, reason=refused.reason, external_id=relative, scope=relative)
                continue
            prefix = _rule_for(rules, relative)
            for doc in parsed:
                own = doc.visibility is not None or doc.acl is not None
                if prefix is not None:
                    access, source_of_access = rules[prefix], "sidecar"
                elif own:
                    access, source_of_access = Access(doc.visibility or Visibility.WORKSPACE, tuple(doc.acl or ())), \
                        "record"
                else:
                    access, source_of_access = Access(), "source"
                yield SourceRecord(
                    external_id=(doc.external_id or relative)[:512], title=doc.title, body=doc.body, scope=scope,
                    format=doc.format, url=doc.record_url, author=doc.author, created_at=doc.created_at,
                    updated_at=doc.updated_at, access=access, segments=tuple(doc.segments), parsed=doc.parse_known,
                    metadata={**doc.metadata, "path": relative, "access_from": source_of_access})


def zip_bytes(files: Mapping[str, bytes]) -> bytes:
    """A zip of these files (tests and the bench build folder exports with it)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()
