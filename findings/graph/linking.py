"""Query entity linking: which entities a question names (exact name, alias, or trigram-similar name), among
those that exist for the caller — grounded in a record they may read (findings.sql.graph)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from groundwork.authority import Authority
from knowledge.access import chunk_access_params
from knowledge.stopwords import STOPWORDS

from ..audit import entity_key
from ..sql.graph import LinkedNode, entities_link

MAX_NGRAM = 4
MAX_PHRASES = 80
MAX_SEEDS = 5
# Trigram similarity a fuzzy match needs: "Priya Nayr" → "Priya Nair" is 0.57, "Marcus Lee" → "Marcus Chen" 0.44.
MIN_SIMILARITY = 0.5
_TOKEN = re.compile(r"[\w][\w.&/-]*[\w]|[\w]")
_POSSESSIVE = re.compile(r"['’]s$")


def _named(token: str) -> bool:
    """A token that can start or end a name: capitalised or holding a digit (`Priya`, `OPS-12`, `Q3`); not a
    lone initial ("B" of "Lena B. Okafor" starts or ends nothing)."""
    return (len(token) > 1 and token[:1].isupper()) or any(ch.isdigit() for ch in token)


def question_phrases(query: str) -> list[tuple[str, bool]]:
    """Candidate names in a question as (entity key, fuzzy allowed), best candidates first:

    - runs of up to four words that begin and end with a capitalised or numbered word ("Priya Nair", "OPS-12");
      fuzzy (trigram) matching only for those of several words without digits: "OPS-124" must not find "OPS-123";
    - then runs of two to four words with a lower-case end ("the Northgate pilot board", "the safety
      committee"), exact or alias matches only: entities are often named as common nouns, and such a phrase
      must be an entity's whole key to count, so "pilot board" never stands for "Northgate pilot board".

    No candidate begins or ends with a stopword. A phrase inside a longer one that matched is dropped when the
    links are picked (`nodes_pick`): "Northgate" does not link beside "Northgate pilot board"."""
    tokens = [_POSSESSIVE.sub("", t) for t in _TOKEN.findall(query)]
    named: dict[str, bool] = {}
    common: dict[str, bool] = {}
    for i in range(len(tokens)):
        for n in range(1, MAX_NGRAM + 1):
            words = tokens[i:i + n]
            if len(words) < n:
                break
            first, last = words[0], words[-1]
            if first.casefold() in STOPWORDS or last.casefold() in STOPWORDS:
                continue
            key = entity_key(" ".join(words))
            if len(key) < 2 or key in named:
                continue
            if _named(first) and _named(last):
                # Fuzzy only for a name of several words: one word ("Okafor") resembles every full name holding it.
                named[key] = n > 1 and len(key) >= 5 and not any(ch.isdigit() for ch in key)
                common.pop(key, None)
            elif n > 1:
                common[key] = False
    return [*named.items(), *common.items()][:MAX_PHRASES]


@dataclass(frozen=True)
class NamedEntity:
    node: int
    phrase: str
    method: str  # exact | alias | trigram
    score: float
    name: str  # the name that matched, of an entity grounded for the caller


def nodes_pick(found: list[LinkedNode], limit: int = MAX_SEEDS) -> list[NamedEntity]:
    """One row per node (its best match), best first. A phrase inside a longer matched phrase ("Priya" inside
    "Priya Nayr", matched by trigrams to Priya Nair) adds no node of its own: the longer name is the one meant."""
    # A phrase that names an entity exactly (or by alias) means that one, not the ones its trigrams resemble.
    certain = {row.phrase for row in found if row.method != "trigram"}
    found = [row for row in found if row.method != "trigram" or row.phrase not in certain]
    best: dict[int, LinkedNode] = {}
    for row in found:
        if row.node not in best or (row.score, len(row.phrase)) > (best[row.node].score, len(best[row.node].phrase)):
            best[row.node] = row
    longest_first = sorted(best.values(), key=lambda r: (-len(r.phrase), -r.score, r.node))
    kept: list[LinkedNode] = []
    for row in longest_first:
        if not any(row.phrase != k.phrase and f" {row.phrase} " in f" {k.phrase} " for k in kept):
            kept.append(row)
    ordered = sorted(kept, key=lambda r: (-r.score, -len(r.phrase), r.node))[:limit]
    return [NamedEntity(r.node, r.phrase, r.method, r.score, r.name) for r in ordered]


def entities_named_in(access_params: dict, query: str, *, limit: int = MAX_SEEDS) -> list[NamedEntity]:
    phrases = question_phrases(query)
    if not phrases:
        return []
    found = entities_link([p for p, _ in phrases], [f for _, f in phrases], access_params,
                          min_similarity=MIN_SIMILARITY, limit=limit * 8)
    return nodes_pick(found, limit)


def entities_named(authority: Authority, query: str, *, limit: int = MAX_SEEDS) -> list[NamedEntity]:
    """The graph nodes a question names that exist for this caller, best match first (a selector)."""
    return entities_named_in(chunk_access_params(authority), query, limit=limit)
