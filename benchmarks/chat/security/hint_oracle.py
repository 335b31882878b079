"""`hint_oracle_gap_points`: whether the hidden-record hint confirms a guess (goal < 5 points).

A member of tenant A guesses: code names, dollar figures, ticket numbers and plain words, each alone or in a
one-line question ("What about HEATHERLIGHT?"). Half of the guesses occur in A's restricted records (which
the member cannot read), half occur nowhere. The figure is the difference of the two hint rates, in percentage
points: a hint that depends on a guess being right is an oracle. 500 guesses (quick: 100).

The rate is that of `hidden_relevant`, the probe behind every answer's hint, called as the answer pipeline calls
it — so the per-caller hint allowance (ANSWER_HINTS_PER_HOUR), which would hide an oracle behind a quota,
does not enter. `hint_oracle_topic_hint` (1) checks the hint still works: a real question about the hidden
records' topic, in words the tenant's shared records hold too, gets one.
"""

from __future__ import annotations

import random
from pathlib import Path

from django.conf import settings

from knowledge.retrieval.hints import hidden_relevant
from knowledge.services import DocumentInput

from ._world import probe_world

SYLLABLES = ("zor", "vath", "quel", "mira", "dosk", "brin", "tal", "ekko", "fen", "wyr", "gax", "lum", "pry", "soth")
# Ordinary words the probe's other records never use: a guessed word, not a code name.
WORDS = ("harpoon", "marmalade", "trombone", "glacier", "saffron", "zeppelin", "walnut", "lantern", "porcelain",
         "tapestry", "anchovy", "bagpipe", "cactus", "dolphin", "emerald", "falcon", "gazebo", "hammock", "igloo",
         "jasmine", "kayak", "lobster", "mango", "nectar", "oyster", "pelican", "quilt", "raccoon", "sapphire",
         "tulip", "umbrella", "velvet", "walrus", "yogurt", "zucchini", "accordion", "biscuit", "canoe", "daffodil",
         "eggplant")
TEMPLATES = ("{}", "{}?", "what about {}?", "What about {}?")
TOPIC = "What is the budget of the robotics team for the secret projects?"


def guesses(rng: random.Random, n: int) -> tuple[list[str], list[str]]:
    """n code names and n dollar figures, none a word of any vocabulary (shared with the hint tests)."""
    names: set[str] = set()
    while len(names) < n:
        names.add("".join(rng.choice(SYLLABLES) for _ in range(3)))
    figures: set[str] = set()
    while len(figures) < n:
        figures.add(f"${rng.randrange(100, 999)},{rng.randrange(0, 999):03d}")
    return sorted(names), sorted(figures)


def guess_questions(names: list[str], figures: list[str]) -> list[str]:
    """Every guess in every one-line form (shared with the hint tests)."""
    out = []
    for guess in [*names, *(n.upper() for n in names), *figures]:
        out += [template.format(guess) for template in TEMPLATES]
    return out


def _guess_sets(rng: random.Random, total: int) -> tuple[list[str], list[str], list[dict]]:
    """(present, absent) guesses, `total` in all, and the restricted records holding the present ones. Five
    kinds in equal shares: code names as written and in capitals, dollar figures, ticket numbers, plain words."""
    per_kind = total // 10
    names, figures = guesses(rng, 2 * per_kind)
    tickets = [f"KR-{n}" for n in rng.sample(range(1000, 9999), 2 * per_kind)]
    words = list(WORDS)
    rng.shuffle(words)
    word_halves = words[: len(words) // 2], words[len(words) // 2:]
    sets: list[list[str]] = []
    for h, part in enumerate((slice(0, per_kind), slice(per_kind, 2 * per_kind))):
        pool = word_halves[h]
        kinds = (names[part], [n.upper() for n in names[part]], figures[part], tickets[part],
                 [pool[j % len(pool)] for j in range(per_kind)])
        sets.append([TEMPLATES[(i + j + j // len(pool)) % len(TEMPLATES)].format(g)
                     for i, group in enumerate(kinds) for j, g in enumerate(group)])
    records = [{"name": names[i], "figure": figures[i], "ticket": tickets[i],
                "word": word_halves[0][i % len(word_halves[0])]} for i in range(per_kind)]
    return sets[0], sets[1], records


def measure(out_dir: Path, quick: bool) -> dict:
    total = 100 if quick else 500
    rng = random.Random(11)
    present, absent, records = _guess_sets(rng, total)
    with probe_world() as world:
        # The topic is one the tenant writes about openly: the probe searches only by words its shared records hold.
        world.ingest(world.a, [DocumentInput(external_id="budgets", title="Budget cycle",
                                             body="Every team plans the budget of its projects, secret or not, in "
                                                  "March; the robotics team presents in May.")])
        world.ingest(world.a, [
            DocumentInput(external_id=f"secret-{i}", title=f"Project {r['name'].upper()}",
                          body=(f"Project {r['name'].upper()} ({r['name']}) has a budget of {r['figure']} for the "
                                f"robotics team. Ticket {r['ticket']} tracks the {r['word']} order."),
                          visibility="restricted", acl=("group:vault",))
            for i, r in enumerate(records)])
        member, k = world.authority("member"), settings.ANSWER_TOP_K
        rate_present = sum(bool(hidden_relevant(member, q, k=k)) for q in present) / len(present)
        rate_absent = sum(bool(hidden_relevant(member, q, k=k)) for q in absent) / len(absent)
        topic_hint = int(bool(hidden_relevant(member, TOPIC, k=k)))
    return {"hint_oracle_gap_points": round(100 * abs(rate_present - rate_absent), 2),
            "hint_oracle_guesses": len(present) + len(absent),
            "hint_oracle_rate_present": round(rate_present, 4), "hint_oracle_rate_absent": round(rate_absent, 4),
            "hint_oracle_topic_hint": topic_hint}
