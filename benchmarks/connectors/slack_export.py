"""A seeded, generated Slack export of any size, for the connectors bench and its test."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

WORDS = ("budget", "depot", "invoice", "ferry", "policy", "laptop", "contract", "review", "schedule", "vendor",
         "safety", "training", "audit", "release", "customer", "ticket", "warehouse", "pipeline", "quarter",
         "meeting", "forecast", "inventory", "shipment", "hiring", "onboarding", "benefit", "travel", "expense")
START = 1767225600  # 2026-01-01 00:00 UTC


@dataclass
class GeneratedExport:
    root: Path
    messages: int
    users: list[str]
    public: list[str]
    private: list[str]
    members: dict[str, list[str]] = field(default_factory=dict)  # private channel id → member ids
    markers: dict[str, str] = field(default_factory=dict)  # private channel id → a word only it holds

    def email(self, user_id: str) -> str:
        return f"{user_id.lower()}@bench.test"

    def groups_write(self) -> None:
        """Rewrite groups.json from `members` (what a permission change in Slack looks like in a new export)."""
        _write(self.root / "groups.json", [{"id": c, "name": c.lower(), "members": self.members[c]}
                                           for c in self.private])


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))).capitalize() + "."


def slack_export_generate(root: Path, *, messages: int, users: int = 300, public: int = 30, private: int = 10,
                          members_per_private: int = 120, days: int = 90, seed: int = 15) -> GeneratedExport:
    rng = random.Random(seed)
    user_ids = [f"U{i:05d}" for i in range(users)]
    export = GeneratedExport(root=root, messages=messages, users=user_ids,
                             public=[f"C{i:04d}" for i in range(public)], private=[f"G{i:04d}" for i in range(private)])
    _write(root / "users.json", [{"id": u, "name": u.lower(), "profile": {"email": export.email(u),
                                                                            "real_name": f"User {u}"}}
                                 for u in user_ids])
    _write(root / "channels.json", [{"id": c, "name": c.lower(), "members": user_ids} for c in export.public])
    for channel in export.private:
        export.members[channel] = sorted(rng.sample(user_ids, members_per_private))
        export.markers[channel] = f"zq{rng.getrandbits(40):010x}"
    export.groups_write()
    channels = export.public + export.private
    days_of: dict[tuple[str, str], list[dict]] = defaultdict(list)
    roots: dict[str, list[str]] = defaultdict(list)
    for channel in export.private:  # one message per private channel carries its marker (the stale-read probe)
        day = datetime.fromtimestamp(START, tz=UTC).strftime("%Y-%m-%d")
        days_of[(channel, day)].append({"type": "message", "user": export.members[channel][0],
                                        "text": f"Codename {export.markers[channel]} stays in this room.",
                                        "ts": f"{START}.000001"})
    for i in range(messages - len(export.private)):
        channel = rng.choice(channels)
        second = START + rng.randrange(days * 86400)
        ts = f"{second}.{i:06d}"
        message = {"type": "message", "user": rng.choice(export.members.get(channel, user_ids)), "text": _text(rng),
                   "ts": ts}
        if roots[channel] and rng.random() < 0.25:
            message["thread_ts"] = rng.choice(roots[channel][-20:])
        elif rng.random() < 0.08:
            message["thread_ts"] = ts
            roots[channel].append(ts)
        day = datetime.fromtimestamp(second, tz=UTC).strftime("%Y-%m-%d")
        days_of[(channel, day)].append(message)
    for (channel, day), day_messages in days_of.items():
        _write(root / channel.lower() / f"{day}.json", day_messages)
    return export


def membership_changes(export: GeneratedExport, changes: int, *, seed: int = 16) -> dict[str, list[str]]:
    """Apply `changes` membership changes across the private channels, half removals and half additions, and
    rewrite groups.json. Returns the removed members per channel."""
    rng = random.Random(seed)
    per_channel = changes // len(export.private)
    removed: dict[str, list[str]] = {}
    for channel in export.private:
        current = export.members[channel]
        gone = rng.sample(current, per_channel // 2)
        outside = [u for u in export.users if u not in set(current)]
        added = rng.sample(outside, per_channel - per_channel // 2)
        export.members[channel] = sorted((set(current) - set(gone)) | set(added))
        removed[channel] = gone
    export.groups_write()
    return removed
