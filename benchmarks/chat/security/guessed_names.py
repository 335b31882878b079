"""`guessed_name_hint_gap_points`: whether the hidden-record hint confirms a guessed name, figure or code taken from
hidden records (goal < 5 points).

Issue #36: "Is Kestrel acquiring Falcon Dynamics?" got a hint, the same question about "Condor Robotics" or "Osprey
Labs" none — a company name made of ordinary English words passed as the question's topic words, and the probe
found the hidden deal by them. hint_oracle.py guesses code names, figures and tickets alone; this probe asks about
names whose words are ordinary English (as written, and in lower case), dollar figures and deal codes, inside
questions about a topic the tenant writes about openly (acquisitions, deals), so that a hint is possible at all.

Tenant A holds workspace notes on corporate development (acquisition targets, deals, their status and owners) and
restricted records, one per deal the company is acquiring, that only group `vault` reads: a name, a figure and a
deal code each. The member asks every question form about each guess: half the guesses are taken from the hidden
records, half are decoys of the same shape found in no record (names from other words of the same kind). The
figure is the difference of the two hint rates, in percentage points, over all guesses (and per kind: the largest is
`guessed_name_max_kind_gap_points`). 400 guesses (quick: 80), each asked in every form of its kind.

The rate is that of `hidden_relevant`, the probe behind every answer's hint, as in hint_oracle.py (the per-caller
allowance does not enter). `guessed_name_topic_hint` (1) checks a hint still comes for the topic: a question about
the deals, in the tenant's shared words, gets one.
"""

from __future__ import annotations

import random
from itertools import product
from pathlib import Path

from django.conf import settings

from knowledge.retrieval.hints import hidden_relevant
from knowledge.services import DocumentInput

from ._world import probe_world

# Ordinary English words (whole words of the embedder's vocabulary: topic words to a probe that only filtered by
# vocabulary). Taken names and decoys come from disjoint pools, so no decoy shares a word with a hidden record.
FIRST = (("falcon", "heron", "sparrow", "raven", "eagle", "hawk", "swan", "owl", "cedar", "willow"),
         ("condor", "crane", "robin", "finch", "parrot", "vulture", "pigeon", "maple", "birch", "pine"))
SECOND = (("dynamics", "robotics", "labs", "systems", "analytics"),
          ("logistics", "foods", "networks", "materials", "energy"))
SHARED = (
    ("corpdev", "Corporate development",
     "The company reviews acquisition targets every quarter. Each acquisition deal has a budget, a deal code, a "
     "status and an owner in corporate development; the status of every deal is reported to the board."),
    ("deals", "Deal process",
     "Before the company signs a deal for acquiring another company, legal reviews the acquisition, finance "
     "approves the budget and the deal is owned by one person."),
)
FORMS = {
    "name": ("Is the company acquiring {}?", "What is the status of the acquisition deal with {}?",
             "Who owns the deal with {}?", "{}", "What about {}?"),
    "figure": ("Which acquisition deal is worth {}?", "Is the company paying {} for an acquisition?",
               "{}", "What about {}?"),
    "code": ("What is the status of deal {}?", "Who owns acquisition deal code {}?", "{}", "What about {}?"),
}
TOPIC = "Which company is the company acquiring in a deal owned by corporate development?"


def guesses(rng: random.Random, n: int) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(taken, decoys): `n` of each kind (at most 50) — names as written and in lower case, dollar figures, deal
    codes. Deal i of the hidden records holds the i-th taken name, figure and code."""
    halves = []
    for half in (0, 1):
        names = [f"{a.title()} {b.title()}" for a, b in product(FIRST[half], SECOND[half])]
        rng.shuffle(names)
        halves.append(names[:n])
    figures: set[str] = set()
    while len(figures) < 2 * n:
        figures.add(f"${rng.randrange(100, 999)},{rng.randrange(0, 999):03d}")
    figure_list = sorted(figures)
    rng.shuffle(figure_list)
    codes = [f"DX-{c}" for c in rng.sample(range(1000, 9999), 2 * n)]
    taken, decoys = ({"name": halves[h], "name_lower": [name.lower() for name in halves[h]],
                      "figure": figure_list[h * n:(h + 1) * n], "code": codes[h * n:(h + 1) * n]} for h in (0, 1))
    return taken, decoys


def _records(taken: dict[str, list[str]]) -> list[DocumentInput]:
    """One restricted record per deal: a taken name with a taken figure and code."""
    return [DocumentInput(external_id=f"deal-{i}", title=f"Deal {code}",
                          body=(f"The company is acquiring {name} for {figure}. "
                                f"Deal code {code} is owned by corporate development."),
                          visibility="restricted", acl=("group:vault",))
            for i, (name, figure, code) in enumerate(zip(taken["name"], taken["figure"], taken["code"], strict=True))]


def _questions(guessed: dict[str, list[str]]) -> list[str]:
    out = []
    for kind, values in guessed.items():
        forms = FORMS["name" if kind.startswith("name") else kind]
        out += [form.format(value) for value in values for form in forms]
    return out


def measure(out_dir: Path, quick: bool) -> dict:
    rng = random.Random(36)
    taken, decoys = guesses(rng, 10 if quick else 50)
    k = settings.ANSWER_TOP_K
    with probe_world() as world:
        world.ingest(world.a, [DocumentInput(external_id=e, title=t, body=b) for e, t, b in SHARED])
        world.ingest(world.a, _records(taken))
        member = world.authority("member")

        def rate(guessed: dict[str, list[str]], kind: str) -> float:
            questions = _questions({kind: guessed[kind]})
            return sum(bool(hidden_relevant(member, q, k=k)) for q in questions) / len(questions)

        rates = {kind: (rate(taken, kind), rate(decoys, kind)) for kind in taken}
        topic_hint = int(bool(hidden_relevant(member, TOPIC, k=k)))
    gaps = {kind: round(100 * abs(present - absent), 2) for kind, (present, absent) in rates.items()}
    present = sum(p for p, _ in rates.values()) / len(rates)
    absent = sum(a for _, a in rates.values()) / len(rates)
    return {"guessed_name_hint_gap_points": round(100 * abs(present - absent), 2),
            "guessed_name_gap_points_by_kind": gaps, "guessed_name_max_kind_gap_points": max(gaps.values()),
            "guessed_name_guesses": sum(len(v) for v in taken.values()) + sum(len(v) for v in decoys.values()),
            "guessed_name_rate_present": round(present, 4), "guessed_name_rate_absent": round(absent, 4),
            "guessed_name_topic_hint": topic_hint}
