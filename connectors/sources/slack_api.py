"""Slack live API mode (slack-sdk's WebClient): the same records and access as the export connector, read from
the Web API with the connector's token (its encrypted credentials: {"token": "xoxb-…"}).

Calls: `users.list` (e-mails), `conversations.list` (public and private channels the token sees),
`conversations.members` (private channels only: a public channel inherits the source's defaults),
`conversations.history` and `conversations.replies` (threads). Every list call follows
`response_metadata.next_cursor`, bounded by SLACK_API_MAX_PAGES per call.

Incremental sync: the connector keeps, per channel, the newest message ts it synced (Connector.sync_state). The
next content run asks history from the start of that message's UTC day minus `thread_lookback_days` (default
7), so every channel-day record it yields is whole (a day record built from a partial day would overwrite the
stored one with less), and threads started in that window get their new replies. A channel the token's owner
is not a member of (`is_member: false`) is skipped, its stored documents kept. A reply to an older thread is
picked up by the next full sync (settings `incremental: false`, or a cleared cursor). Documents of an
incrementally read channel that the run did not see are kept (the listing is partial); a channel gone from
conversations.list loses its documents.

Rate limits: HTTP 429 is retried after its Retry-After (slack-sdk's RateLimitErrorRetryHandler), at most
SLACK_API_RATE_LIMIT_RETRIES times per call and never for a Retry-After over SLACK_API_MAX_RETRY_AFTER_S; the
seconds waited are recorded on the run. A call still refused fails the channel (a RecordError on its scope, so
nothing of it is deleted) or, for the directory calls, the run.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from django.conf import settings
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from .base import CheckpointInvalid, ConnectorError, PermissionSnapshot, RecordError, SlimListing, SourceRecord
from .slack import _SKIPPED_SUBTYPES, SlackExportConnector, _when


def _is_ts(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


class BoundedRateLimitHandler(RateLimitErrorRetryHandler):
    """Retries a 429 after its Retry-After, but never waits longer than `max_wait_s` at once; adds each wait to
    `waited_s` so the run can show how long the source held it back."""

    def __init__(self, *, max_retry_count: int, max_wait_s: float) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self.max_wait_s = max_wait_s
        self.waited_s = 0.0

    @staticmethod
    def _retry_after(response) -> float:
        for key, values in (response.headers or {}).items():
            if key.lower() == "retry-after":
                value = values[0] if isinstance(values, list) else values
                try:
                    return float(value)
                except (TypeError, ValueError):
                    return 1.0
        return 1.0

    def _can_retry(self, *, state, request, response=None, error=None) -> bool:
        return super()._can_retry(state=state, request=request, response=response, error=error) \
            and self._retry_after(response) <= self.max_wait_s

    def prepare_for_next_attempt(self, *, state, request, response=None, error=None) -> None:
        started = time.monotonic()
        super().prepare_for_next_attempt(state=state, request=request, response=response, error=error)
        self.waited_s += time.monotonic() - started


class SlackApiConnector(SlackExportConnector):
    kind = "slack_api"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        token = self.credentials.get("token")
        if not isinstance(token, str) or not token.strip():
            raise ConnectorError("the Slack connector needs a token in its credentials")
        self.retry = BoundedRateLimitHandler(max_retry_count=settings.SLACK_API_RATE_LIMIT_RETRIES,
                                             max_wait_s=settings.SLACK_API_MAX_RETRY_AFTER_S)
        self.client = WebClient(token=token.strip(), base_url=settings.SLACK_API_BASE_URL,
                                timeout=settings.SLACK_API_TIMEOUT_S, retry_handlers=[self.retry])
        self.cursors: dict[str, str] = dict((self.state or {}).get("channels") or {})
        self.incremental = bool(self.settings.get("incremental", True)) and bool(self.cursors)
        self._partial: set[str] = set()

    @property
    def waited_s(self) -> float:
        return self.retry.waited_s

    # --- Web API --------------------------------------------------------------------------------------------
    def _pages(self, method: str, key: str, item_type: type = dict, **params) -> Iterator:
        """The items under `key` of every page of `method`, following response_metadata.next_cursor."""
        cursor = ""
        for _ in range(settings.SLACK_API_MAX_PAGES):
            response = self.client.api_call(method, params={**params, "limit": 200,
                                                            **({"cursor": cursor} if cursor else {})})
            items = response.get(key)
            if not isinstance(items, list):
                raise SlackClientError(f"{method} answered without a list of {key}")
            yield from (item for item in items if isinstance(item, item_type))
            cursor = ((response.get("response_metadata") or {}).get("next_cursor") or "").strip()
            if not cursor:
                return
        raise SlackClientError(f"{method} returned more than {settings.SLACK_API_MAX_PAGES} pages")

    def _directory(self, export=None) -> tuple[dict[str, dict], list[dict]]:
        """(users by id, channels each with `private` and, for private ones, `members`), as the export reads."""
        try:
            users = {u["id"]: u for u in self._pages("users.list", "members") if isinstance(u.get("id"), str)}
            channels = []
            for channel in self._pages("conversations.list", "channels", types="public_channel,private_channel"):
                if not isinstance(channel.get("id"), str):
                    continue
                private = bool(channel.get("is_private") or channel.get("is_group"))
                members = list(self._pages("conversations.members", "members", str, channel=channel["id"])) \
                    if private else []
                channels.append({**channel, "private": private, "members": members})
        except SlackApiError as exc:
            raise ConnectorError(f"Slack refused {exc.response.get('error', 'the call')} "
                                 f"(HTTP {exc.response.status_code})") from exc
        except (SlackClientError, OSError) as exc:
            raise ConnectorError(f"Slack could not be read: {exc}") from exc
        return users, channels

    def permissions(self) -> PermissionSnapshot:
        users, channels = self._directory()
        by_channel = {c["id"]: self._access(users, c) for c in channels}
        return PermissionSnapshot(resolve=lambda metadata: by_channel.get(str(metadata.get("channel_id", ""))),
                                  scopes=len(by_channel))

    # --- content --------------------------------------------------------------------------------------------
    def _oldest(self, cid: str) -> str | None:
        if not self.incremental or cid not in self.cursors:
            return None
        day = _when(self.cursors[cid]).replace(hour=0, minute=0, second=0, microsecond=0)
        lookback = timedelta(days=int(self.settings.get("thread_lookback_days", 7)))
        return f"{(day - lookback).timestamp():.6f}"

    def _messages(self, cid: str, oldest: str | None) -> list[dict]:
        """Every message of the channel since `oldest` (all when None), thread replies included."""
        found: dict[str, dict] = {}
        for message in self._pages("conversations.history", "messages", channel=cid,
                                   **({"oldest": oldest, "inclusive": "true"} if oldest else {})):
            if isinstance(message.get("ts"), str):
                found[message["ts"]] = message
            if message.get("reply_count") and message.get("thread_ts") == message.get("ts"):
                for reply in self._pages("conversations.replies", "messages", channel=cid, ts=message["ts"]):
                    if isinstance(reply.get("ts"), str):
                        found[reply["ts"]] = reply
        return sorted(found.values(), key=lambda m: float(m["ts"]))

    def records(self) -> Iterator[SourceRecord | RecordError]:
        users, channels = self._directory()
        for channel in channels:
            if self.unit(f"channel {channel['id']}"):  # one channel's history: a resumed run skips committed ones
                yield from self._live_channel_records(users, channel)

    def window(self) -> dict:
        # The cursors advanced so far: channels a resumed run skips keep what their run read.
        return {"cursors": dict(self.cursors)}

    def window_restore(self, window: dict) -> None:
        cursors = window.get("cursors")
        if not isinstance(cursors, dict) or not all(isinstance(k, str) and isinstance(v, str) and _is_ts(v)
                                                    for k, v in cursors.items()):
            raise CheckpointInvalid("live Slack's window is its cursors: channel id -> message ts")
        self.cursors = dict(cursors)

    def slim_listing(self) -> SlimListing | None:
        return None  # a channel's history is its listing: a resumed run leaves deletions to the next full one

    def _live_channel_records(self, users, channel: dict) -> Iterator[SourceRecord | RecordError]:
        cid, name = channel["id"], str(channel.get("name") or channel["id"])
        if channel.get("is_member") is False:
            # The token's owner is not in this channel: Slack lets it read nothing there. Not an error to repeat
            # every run; what was synced from it stays (and its access still follows the permission sync).
            self._partial.add(cid)
            return
        oldest = self._oldest(cid)
        try:
            messages = self._messages(cid, oldest)
        except (SlackApiError, SlackClientError, OSError) as exc:
            reason = exc.response.get("error", "error") if isinstance(exc, SlackApiError) else str(exc)
            yield RecordError(item=cid, reason=f"channel history unreadable: {reason}"[:300], scope=cid)
            return
        if oldest is not None:
            self._partial.add(cid)
        groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
        for message in messages:
            if message.get("subtype") in _SKIPPED_SUBTYPES:
                continue
            if not isinstance(message.get("text"), str):
                yield RecordError(item=f"{cid}/{message['ts']}", reason="a message without text", scope=cid)
                continue
            thread = message.get("thread_ts")
            day = f"{datetime.fromtimestamp(float(message['ts']), tz=UTC):%Y-%m-%d}"
            groups[("thread", thread) if isinstance(thread, str) and thread else ("day", day)].append(message)
        access = self._access(users, channel)
        for (kind, key), group in groups.items():
            try:
                yield self._record(cid, name, channel["private"], kind, key, group, users, access)
            except (ValueError, OverflowError) as exc:
                yield RecordError(item=f"{cid}/{kind}/{key}", reason=f"unreadable messages: {exc}"[:300],
                                  external_id=f"{cid}/{kind}/{key}", scope=cid)
        if messages:
            self.cursors[cid] = max((m["ts"] for m in messages), key=float)

    def partial_scopes(self) -> set[str]:
        return set(self._partial)

    def state_after(self) -> dict | None:
        """The cursors to keep after a content run that read every channel it could (a channel whose history
        failed keeps its old cursor: it was never advanced)."""
        return {"channels": dict(self.cursors)}

