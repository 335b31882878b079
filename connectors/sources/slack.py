"""A Slack workspace export (the standard export, as a folder or a .zip).

Layout read: `users.json` (ids → e-mail), `channels.json` (public channels, with `members`), `groups.json`
(private channels, with `members`; a channel in channels.json flagged `is_private` counts as private too), and
one folder per channel (named by the channel's name, or its id) of daily `YYYY-MM-DD.json` message lists.
Direct messages (`dms.json`, `mpims.json`) are not imported.

Records: **one record per thread** (its root and every reply, whichever days they fall on) and **one record per
channel-day** for the messages outside threads. A thread is what people cite as one conversation; a day of
unthreaded chat is the next natural unit, small enough to chunk well and stable under re-export (a new day adds
a record, it does not change old ones).

Access: a private channel is `restricted` to its members, each mapped to `email:<address>` (a member without an
e-mail in users.json, or deactivated there, is left out: fail closed). A public channel is readable by the whole
workspace: its records inherit the source's defaults (workspace unless an admin narrowed the source). A
permission sync reads users.json, channels.json and groups.json only.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime

from knowledge.models import Visibility

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
from .export_files import ExportFiles

# A channel folder is named by one path component: a name from channels.json never reaches outside the export.
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}$")
_DAY_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.json$")
_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^<>]*)?>")
# Housekeeping messages that carry no knowledge.
_SKIPPED_SUBTYPES = {"channel_join", "channel_leave", "channel_purpose", "channel_topic", "channel_name",
                     "channel_archive", "channel_unarchive", "group_join", "group_leave", "pinned_item"}


class _Export(ExportFiles):
    """The export's folder or zip (ExportFiles: named files, size-capped), read the Slack way: day files of a
    channel, and JSON files that hold lists (absent and not required: empty)."""

    def day_files(self, folder: str) -> list[str]:
        return [n for n in self.names(folder) if _DAY_FILE.match(n)]

    def json(self, name: str, *, required: bool = True):
        data = super().json(name, required=required)
        if data is None:
            return []
        if not isinstance(data, list):
            raise ConnectorError(f"{name} must hold a list")
        return data


def _when(ts: str) -> datetime:
    return datetime.fromtimestamp(float(ts), tz=UTC)


class SlackExportConnector(SourceConnector):
    kind = "slack_export"

    def _export(self) -> _Export:
        return _Export(path_inside(self.root, self.settings.get("path", "")))

    def _directory(self, export: _Export) -> tuple[dict[str, dict], list[dict]]:
        """(users by id, channels each with `private`)."""
        users = {u["id"]: u for u in export.json("users.json") if isinstance(u, dict) and "id" in u}
        channels = []
        for name, private in (("channels.json", False), ("groups.json", True)):
            for channel in export.json(name, required=name == "channels.json"):
                if isinstance(channel, dict) and isinstance(channel.get("id"), str):
                    channels.append({**channel, "private": private or bool(channel.get("is_private"))})
        return users, channels

    @staticmethod
    def _email(users: Mapping[str, dict], user_id: str) -> str | None:
        user = users.get(user_id) or {}
        if user.get("deleted") is True:
            return None  # deactivated in Slack: reads nothing there, so nothing here either
        email = (user.get("profile") or {}).get("email")
        return email.strip().lower() if isinstance(email, str) and "@" in email else None

    def _access(self, users: Mapping[str, dict], channel: dict) -> Access:
        if not channel["private"]:
            return Access()
        members = channel.get("members") if isinstance(channel.get("members"), list) else []
        emails = sorted({e for e in (self._email(users, m) for m in members if isinstance(m, str)) if e})
        return Access(visibility=Visibility.RESTRICTED, acl=tuple(f"email:{e}" for e in emails))

    def permissions(self) -> PermissionSnapshot:
        users, channels = self._directory(self._export())
        by_channel = {c["id"]: self._access(users, c) for c in channels}

        def resolve(metadata: Mapping) -> Access | None:
            return by_channel.get(str(metadata.get("channel_id", "")))

        return PermissionSnapshot(resolve=resolve, scopes=len(by_channel))

    def records(self) -> Iterator[SourceRecord | RecordError]:
        export = self._export()
        users, channels = self._directory(export)
        for channel in channels:
            if self.unit(f"channel {channel['id']}"):  # one channel's day files: a resumed run skips committed ones
                yield from self._channel_records(export, users, channel)

    def slim_listing(self) -> SlimListing | None:
        return self._slim_from_records()

    def _channel_records(self, export: _Export, users, channel: dict) -> Iterator[SourceRecord | RecordError]:
        cid, name = channel["id"], str(channel.get("name") or channel["id"])
        if not _SAFE_NAME.match(cid):
            yield RecordError(item=cid[:80], reason="refused: a channel id that is not a plain name")
            return
        folder = name if _SAFE_NAME.match(name) and export.day_files(name) else cid
        groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
        for day_file in export.day_files(folder):
            try:
                messages = json.loads(export.read(f"{folder}/{day_file}") or b"[]")
                if not isinstance(messages, list):
                    raise ValueError("not a list of messages")
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: JSON nested too deep
                yield RecordError(item=f"{folder}/{day_file}", reason=f"unreadable day file: {exc}"[:300], scope=cid)
                continue
            day = day_file[:-5]
            for message in messages:
                if not isinstance(message, dict) or message.get("subtype") in _SKIPPED_SUBTYPES:
                    continue
                ts, text = message.get("ts"), message.get("text")
                if not isinstance(ts, str) or not isinstance(text, str):
                    yield RecordError(item=f"{folder}/{day_file}", reason="a message without ts or text", scope=cid)
                    continue
                thread = message.get("thread_ts")
                key = ("thread", thread) if isinstance(thread, str) and thread else ("day", day)
                groups[key].append(message)
        access = self._access(users, channel)
        for (kind, key), messages in groups.items():
            messages.sort(key=lambda m: float(m["ts"]))
            try:
                yield self._record(cid, name, channel["private"], kind, key, messages, users, access)
            except (ValueError, OverflowError) as exc:
                yield RecordError(item=f"{cid}/{kind}/{key}", reason=f"unreadable messages: {exc}"[:300],
                                  external_id=f"{cid}/{kind}/{key}", scope=cid)

    def _line(self, message: dict, users) -> str:
        user = users.get(message.get("user")) or {}
        who = (user.get("profile") or {}).get("real_name") or user.get("real_name") or user.get("name") \
            or message.get("username") or message.get("user") or "someone"
        text = _MENTION.sub(lambda m: "@" + str((users.get(m.group(1)) or {}).get("name") or m.group(1)),
                            message["text"])
        return f"[{_when(message['ts']):%Y-%m-%d %H:%M}] {who}: {text}"

    def _record(self, cid: str, name: str, private: bool, kind: str, key: str, messages: list[dict], users,
                access: Access) -> SourceRecord:
        body = "\n".join(self._line(m, users) for m in messages)
        first = messages[0]
        if kind == "thread":
            root_text = " ".join(first["text"].split())
            title = f"#{name} thread: {root_text[:80] or key}"
        else:
            title = f"#{name} — {key}"
        base = str(self.settings.get("workspace_url") or "").rstrip("/")
        url = f"{base}/archives/{cid}/p{first['ts'].replace('.', '')}" if base.startswith("https://") else ""
        author_email = self._email(users, first.get("user", "")) if kind == "thread" else None
        return SourceRecord(
            external_id=f"{cid}/{kind}/{key}", title=title, body=body, scope=cid, url=url,
            author=f"email:{author_email}" if author_email else None, created_at=_when(first["ts"]),
            updated_at=_when(messages[-1]["ts"]), access=access,
            metadata={"connector": "slack", "channel_id": cid, "channel": name, "private": private,
                      "messages": len(messages), "unit": kind})
