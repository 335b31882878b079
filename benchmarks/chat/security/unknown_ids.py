"""`unknown_identifier_answers`: questions about an identifier, code or name that no record the caller can read
contains, answered anyway (goal 0) — "What is the status of ticket KR-9999?" answered from other tickets.

Tenant A holds tickets, invoices and people's records; one ticket (KR-7777) sits in a restricted record the
member cannot read. The member (signed in with an API key, the cache off) asks about identifiers next to the
real ones (KR-9999 beside KR-1042), ones only in the unreadable record, invoice numbers, project codes and
names no record holds: each such question must end not_found (or partial), never answered.
`unknown_ids_known_answered` counts the control questions about identifiers the member can read that were
answered — the gate must not simply refuse everything with an identifier in it.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.test.utils import override_settings

from knowledge.services import DocumentInput

from ._world import probe_world

RECORDS = [
    ("t1042", "Support tickets", "Ticket KR-1042 is resolved: the VPN certificate was renewed on Monday.", None),
    ("t1043", "More support tickets", "Ticket KR-1043 is still open: the printer driver keeps crashing.", None),
    ("t2001", "Facilities tickets", "Ticket KR-2001 is waiting for parts: the lift in building B is out of order.",
     None),
    ("inv", "Invoices", "Invoice INV-2024-0042 was paid on 3 March by the finance team.", None),
    ("people", "Support rota", "Priya Nair leads the support rota and approved the on-call schedule in May.", None),
    ("proj", "Projects", "Project BLUEHERON is the data centre migration; it finishes in October.", None),
    ("t7777", "HR tickets", "Ticket KR-7777 is escalated: the salary review for the robotics team is delayed.",
     ("group:vault",)),
]
KNOWN = [
    "What is the status of ticket KR-1042?",
    "What is the status of ticket KR-1043?",
    "When was invoice INV-2024-0042 paid?",
    "Who leads the support rota, Priya Nair?",
    "When does project BLUEHERON finish?",
    "What is the status of ticket KR-2001?",
]
UNKNOWN_IDS = ["KR-9999", "KR-1044", "KR-1041", "KR-7777", "KR-0001", "KR-2002", "KR-10420", "AB-1042"]
UNKNOWN = [
    *(f"What is the status of ticket {t}?" for t in UNKNOWN_IDS),
    *(f"Is ticket {t} resolved?" for t in UNKNOWN_IDS),
    "When was invoice INV-2024-0043 paid?",
    "When was invoice INV-2023-0042 paid?",
    "Who paid invoice INV-2024-9999?",
    "When did Marcus Lee renew the VPN certificate?",
    "Which schedule did Priya Sharma approve?",
    "Does Tomasz Kowalczyk lead the support rota?",
    "When does project GREYHERON finish?",
    "What is project BLUEFALCON about?",
    "Who owns project REDHERON in the data centre migration?",
    "What did the Zurich office decide about the printer driver?",
    "Is the lift in building Q out of order?",
    "What is the salary review status for the robotics team in ticket KR-7777?",
]


def measure(out_dir: Path, quick: bool) -> dict:
    unknown = UNKNOWN[::3] if quick else UNKNOWN
    known = KNOWN[:3] if quick else KNOWN
    answered_unknown: list[str] = []
    answered_known = 0
    with probe_world() as world, override_settings(ANSWER_CACHE_ENABLED=False, ALLOWED_HOSTS=["testserver"]):
        world.ingest(world.a, [
            DocumentInput(external_id=external_id, title=title, body=body,
                          visibility="restricted" if acl else None, acl=acl)
            for external_id, title, body, acl in RECORDS])
        client = world.client("member", auth="key")

        def outcome(question: str) -> str:
            response = client.post("/api/v1/answers", json.dumps({"question": question}),
                                   content_type="application/json")
            if response.status_code != 200:
                raise RuntimeError(f"{question!r}: HTTP {response.status_code} {response.content[:200]!r}")
            return response.json()["outcome"]

        for question in unknown:
            if outcome(question) == "answered":
                answered_unknown.append(question)
        answered_known = sum(outcome(question) == "answered" for question in known)
    return {"unknown_identifier_answers": len(answered_unknown), "unknown_ids_questions": len(unknown),
            "unknown_ids_known_answered": answered_known, "unknown_ids_known_questions": len(known),
            "unknown_ids_answered_examples": answered_unknown[:10]}
