"""Does any regular expression in product code take super-linear time? Synced records (Slack, GitHub, Jira) and
uploads reach the parsers, the chunker and the findings extractor as they come, so one pattern that rescans a long
run from every start position ("\\s*\\(" over 40 KB of spaces, "<title>(.*?)</title>" over repeated "<title>")
is a denial of service by record.

The patterns are found, not listed: the module-level compiled patterns of every product module (also inside
lists, tuples and dicts, and class attributes); the literal patterns code passes to `re.search`, `re.sub`,
`re.finditer`, ... (read from the source: an f-string's or a concatenation's dynamic parts take a module
constant's value, or a sample word where the value is computed per call); and the patterns built at run time from
shipped data (`findings.extractors.patterns.template_regex` over the shipped value-first phrasings).

Each pattern gets adversarial inputs built from its own parse tree: whitespace runs; every prefix of the pattern
that almost matches, repeated ("<title<title...", "<title><title>..."); its literals and a member of each
character class, repeated, alone and space-separated; each prefix around a long run of spaces. It runs the way
the code runs it: a pattern the source only `match`es or `fullmatch`es is tried at position 0; any other
(search, finditer, sub, split, or a use the source does not show) runs `finditer` over the whole input, which
tries every start position.

Timing is the calling thread's CPU time (`time.thread_time`: a busy machine hardly moves it; `process_time` is
read in scheduler ticks while the cap's profiling timer is armed). Each input is screened at 10k and 40k
characters; one that grows more than 6x, above a 2 ms floor, is confirmed at 100k, 400k and 1.6M characters,
best of three runs each, and flagged when both steps grow more than 8x (linear: ~4x, quadratic: ~16x). Any
single run past `CAP_S` is flagged outright. See `check_site`.

`measure(out_dir, quick)`: `regex_superlinear` (patterns flagged; goal 0), `regex_patterns_checked`,
`regex_inputs_checked` and `regex_flagged` (where, input, timings), also written to
`out_dir/regex_linear.json`. `tests/test_regex_linear.py` runs the same scan.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import pkgutil
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from re import _constants as sre  # the parser's opcodes: stable within a Python minor version
from re import _parser as sre_parse

PACKAGES = ("groundwork", "knowledge", "connectors", "findings", "chat")
# Measurement and schema history, not code that tenants' records or questions reach.
_SKIPPED_PARTS = frozenset({"bench", "migrations"})
_SCANNING = frozenset({"search", "finditer", "findall", "sub", "subn", "split"})
_ANCHORED = frozenset({"match", "fullmatch"})
_RE_FUNCTIONS = _SCANNING | _ANCHORED | {"compile"}
# Where each `re` function takes its flags when they are passed by position.
_FLAGS_POSITION = {"compile": 1, "search": 2, "match": 2, "fullmatch": 2, "finditer": 2, "findall": 2,
                   "split": 3, "sub": 4, "subn": 4}
# A dynamic part of an inline pattern (`re.escape(name)`, a local variable) is stood in for by a word.
_SAMPLE_WORD = "Sample"

# Screening sizes (every probe), then confirmation sizes (suspects only): 4x apart, so a linear pattern takes ~4x
# as long at each step and a quadratic one ~16x.
N_SCREEN = 10_000
N_SCREEN_LARGE = 4 * N_SCREEN
N_SMALL = 100_000
N_LARGE = 4 * N_SMALL
N_HUGE = 4 * N_LARGE
SCREEN_FLOOR_S = 0.002  # 40k characters in 2 ms (50 ns each): quadratic or not, no harm at any real size
CONFIRM_FLOOR_S = 0.02  # the same rate at 400k characters; a ratio between timings below it is noise
SUSPECT_RATIO = 6.0
RATIO_LIMIT = 8.0
CAP_S = 2.0  # one run past it is flagged whatever the ratio: seconds for a record is a denial of service
_MAX_UNITS = 32  # repeated units per pattern
_MAX_FRAMED = 16  # prefixes framing a run of spaces
_MAX_SEQUENCES = 8  # alternatives expanded per pattern: a long alternation of words repeats itself

_WHITESPACE = (" ", "\n", "\t ", "\r\n", " \n")
# Characters tried as members of a character class (the first that fits stands for it).
_CANDIDATES = "a A z 1 0 _ . , ; : - ' \" ( ) [ ] { } < > / \\ | # * + ? ! @ & ` ~ = % $ ^ ’ “ ” • « » é".split() + [
    " ", "\t", "\n", "\x00"]
_CATEGORY = {
    sre.CATEGORY_DIGIT: re.compile(r"\d"), sre.CATEGORY_NOT_DIGIT: re.compile(r"\D"),
    sre.CATEGORY_SPACE: re.compile(r"\s"), sre.CATEGORY_NOT_SPACE: re.compile(r"\S"),
    sre.CATEGORY_WORD: re.compile(r"\w"), sre.CATEGORY_NOT_WORD: re.compile(r"\W"),
    sre.CATEGORY_LINEBREAK: re.compile(r"\n"), sre.CATEGORY_NOT_LINEBREAK: re.compile(r"[^\n]"),
}


@dataclass(frozen=True)
class Site:
    """One pattern and how product code runs it."""

    where: str  # "findings.extractors.fields:_TRAILING_PAREN", "knowledge.parsing:107" (an inline pattern)
    pattern: re.Pattern
    scans: bool  # tried at every start position (search, finditer, sub, ...), not only matched at 0


@dataclass(frozen=True)
class Flagged:
    where: str
    pattern: str | bytes
    use: str  # "finditer" or "match"
    probe: str  # "'<title' x n"
    timings: str  # "0.021 s at n=100000, 0.412 s at n=400000"

    def __str__(self) -> str:
        return f"{self.where} {self.use} {self.pattern!r}: {self.probe} -> {self.timings}"


@dataclass
class Scan:
    sites: list[Site] = field(default_factory=list)
    inputs: int = 0
    flagged: list[Flagged] = field(default_factory=list)


# --- finding the patterns ----------------------------------------------------------------------------------


def product_modules() -> list[str]:
    """Every module of the product packages, bench and migrations left out."""
    names: list[str] = []

    def walk(package: str) -> None:
        names.append(package)
        module = importlib.import_module(package)
        for info in pkgutil.iter_modules(module.__path__):
            if info.name in _SKIPPED_PARTS:
                continue
            child = f"{package}.{info.name}"
            if info.ispkg:
                walk(child)
            else:
                names.append(child)

    for package in PACKAGES:
        walk(package)
    return names


def _patterns_in(value: object, depth: int = 0) -> Iterator[re.Pattern]:
    if isinstance(value, re.Pattern):
        yield value
    elif depth < 3 and isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _patterns_in(item, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for key, item in value.items():
            yield from _patterns_in(key, depth + 1)
            yield from _patterns_in(item, depth + 1)


def _imported_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


class _Usage:
    """Which methods product code calls on each module-level pattern: `(module, name) -> {"match", ...}`, through
    the defining module's own name, a `from module import NAME [as alias]` or a `module.NAME`."""

    def __init__(self) -> None:
        self.methods: dict[tuple[str, str], set[str]] = {}

    def read(self, module: str, tree: ast.Module, is_package: bool) -> None:
        local: dict[str, tuple[str, str]] = {}  # a name in this module -> (defining module, name)
        modules: dict[str, str] = {}  # a module alias -> its dotted name
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                package = module if is_package else module.rpartition(".")[0]
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                    if node.level else (node.module or "")
                for alias in node.names:
                    local[alias.asname or alias.name] = (base, alias.name)
                    modules[alias.asname or alias.name] = f"{base}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:  # `import a.b` binds `a`; `import a.b as c` binds `c` to `a.b`
                    modules[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                        alias.name.split(".")[0]
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner, method = node.func.value, node.func.attr
            if isinstance(owner, ast.Name):
                key = local.get(owner.id, (module, owner.id))
            elif isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) \
                    and owner.value.id in modules:
                key = (modules[owner.value.id], owner.attr)
            else:
                continue
            self.methods.setdefault(key, set()).add(method)

    def scans(self, module: str, name: str) -> bool:
        """True unless the source shows only `match`/`fullmatch` calls (an unseen use counts as scanning)."""
        used = self.methods.get((module, name), set()) & (_SCANNING | _ANCHORED)
        return not used or bool(used & _SCANNING)


def _constant_flags(node: ast.expr | None) -> int | None:
    if node is None:
        return 0
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "re":
        value = getattr(re, node.attr, None)
        return int(value) if isinstance(value, re.RegexFlag) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _constant_flags(node.left), _constant_flags(node.right)
        return None if left is None or right is None else left | right
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    return None


def _pattern_text(node: ast.expr, namespace: dict) -> str | bytes:
    """The pattern an inline argument spells: literal parts as written, a module-level string or pattern
    constant by its value (`_SURNAME`, `_DATE_SPAN.pattern`), anything computed per call by a sample word."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(_pattern_text(part, namespace)) for part in node.values)
    if isinstance(node, ast.FormattedValue):
        return _pattern_text(node.value, namespace)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _pattern_text(node.left, namespace) + _pattern_text(node.right, namespace)
    if isinstance(node, ast.Name) and isinstance(namespace.get(node.id), str):
        return namespace[node.id]
    if isinstance(node, ast.Attribute) and node.attr == "pattern" and isinstance(node.value, ast.Name) \
            and isinstance(namespace.get(node.value.id), re.Pattern):
        return namespace[node.value.id].pattern
    return _SAMPLE_WORD


def _inline_sites(module: str, tree: ast.Module, namespace: dict) -> Iterator[Site]:
    """`re.<function>(pattern, ...)` calls with a pattern written in the source (module-level `re.compile`
    assignments included; the caller drops the duplicates of globals)."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                and node.func.attr in _RE_FUNCTIONS and node.args):
            continue
        function = node.func.attr
        flags_node = next((k.value for k in node.keywords if k.arg == "flags"), None)
        if flags_node is None and len(node.args) > _FLAGS_POSITION[function]:
            flags_node = node.args[_FLAGS_POSITION[function]]
        flags = _constant_flags(flags_node)
        if flags is None:
            continue
        text = _pattern_text(node.args[0], namespace)
        if text == _SAMPLE_WORD:
            continue  # built wholly at run time (`re.compile(pattern)`): `_built_sites` covers the shipped ones
        try:
            compiled = re.compile(text, flags)
        except (re.error, TypeError):
            continue  # a sample word where the code puts a fragment of regex syntax: not checkable this way
        yield Site(f"{module}:{node.lineno}", compiled, function != "match" and function != "fullmatch")


def _built_sites() -> Iterator[Site]:
    """Patterns compiled at run time from shipped data rather than written in the source."""
    from findings.extractors.patterns import template_regex

    fleet = importlib.import_module("findings.migrations.0006_fleet_size_and_revisions")
    starter = importlib.import_module("findings.migrations.0002_ontology")
    phrasings = {p for row in starter.STARTER_RELATIONS for p in row[3]} | set(fleet.FLEET_SIZE[3])
    for phrase in sorted(p for p in phrasings if "{n}" in p):
        yield Site(f"findings.extractors.patterns:template_regex({phrase!r})", template_regex(phrase), True)


def pattern_sites() -> list[Site]:
    """Every pattern of the product code, once (by pattern text and flags), with how the code runs it."""
    usage = _Usage()
    parsed: list[tuple[str, object, ast.Module]] = []
    for name in product_modules():
        module = importlib.import_module(name)
        tree = ast.parse(Path(inspect.getfile(module)).read_text())
        usage.read(name, tree, is_package=hasattr(module, "__path__"))
        parsed.append((name, module, tree))
    sites: list[Site] = []
    for name, module, tree in parsed:
        imported = _imported_names(tree)
        for attr, value in vars(module).items():
            if attr in imported:
                continue
            if isinstance(value, type) and value.__module__ == name:
                for class_attr, class_value in vars(value).items():
                    for pattern in _patterns_in(class_value):
                        sites.append(Site(f"{name}:{attr}.{class_attr}", pattern, True))
                continue
            for pattern in _patterns_in(value):
                scans = usage.scans(name, attr) if isinstance(value, re.Pattern) else True
                sites.append(Site(f"{name}:{attr}", pattern, scans))
        # A module-level `re.compile` is one of the globals just read, with its use known: not again as inline.
        own = {(site.pattern.pattern, site.pattern.flags) for site in sites if site.where.startswith(f"{name}:")}
        sites.extend(site for site in _inline_sites(name, tree, vars(module))
                     if (site.pattern.pattern, site.pattern.flags) not in own)
    sites.extend(_built_sites())
    unique: dict[tuple, Site] = {}
    for site in sites:
        key = (site.pattern.pattern, site.pattern.flags)
        if key not in unique:
            unique[key] = site
        elif site.scans and not unique[key].scans:  # the same pattern scanned elsewhere: test the harder use
            unique[key] = Site(unique[key].where, site.pattern, True)
    return list(unique.values())


# --- adversarial inputs ------------------------------------------------------------------------------------


def _in_class(items: list, char: str, ignore_case: bool) -> bool:
    codes = {ord(char), ord(char.lower()), ord(char.upper())} if ignore_case else {ord(char)}
    negate, hit = False, False
    for op, av in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            hit |= av in codes
        elif op is sre.RANGE:
            hit |= any(av[0] <= code <= av[1] for code in codes)
        elif op is sre.CATEGORY:
            hit |= bool(_CATEGORY[av].match(char)) if av in _CATEGORY else False
    return hit != negate


def _members(op, av, ignore_case: bool) -> list[str]:
    """Candidate characters a one-character item accepts."""
    if op is sre.LITERAL:
        return [chr(av)]
    if op is sre.NOT_LITERAL:
        return [c for c in _CANDIDATES if ord(c) != av]
    if op is sre.ANY:
        return [c for c in _CANDIDATES if c != "\n"]
    if op is sre.IN:
        return [c for c in _CANDIDATES if _in_class(av, c, ignore_case)]
    return []


class _Shapes:
    """Strings a pattern's parts match, for building inputs that nearly match it."""

    def __init__(self, flags: int) -> None:
        self.ignore_case = bool(flags & re.IGNORECASE)
        self.pieces: list[str] = []  # literals and one member of each class

    def example(self, items, least: bool = False) -> str:
        """A string `items` match: each repeat once (`least`: as few times as it may, "<title>" for
        "<title[^>]*>"), each branch its first alternative, lookarounds and anchors nothing."""
        out = []
        for op, av in items:
            if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
                members = _members(op, av, self.ignore_case)
                out.append(members[0] if members else "")
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
                low, _high, body = av
                out.append(self.example(body, least) * min(low if least else max(low, 1), 3))
            elif op is sre.SUBPATTERN:
                out.append(self.example(av[-1], least))
            elif op is sre.ATOMIC_GROUP:
                out.append(self.example(av, least))
            elif op is sre.BRANCH:
                out.append(self.example(av[1][0], least))
            elif op is sre.GROUPREF_EXISTS:
                out.append(self.example(av[1], least))
        return "".join(out)

    def collect(self, items) -> None:
        """Literal runs and class members anywhere in the pattern."""
        literal = []
        for op, av in items:
            if op is sre.LITERAL:
                literal.append(chr(av))
                continue
            if literal:
                self.pieces.append("".join(literal))
                literal = []
            if op in (sre.NOT_LITERAL, sre.ANY, sre.IN):
                self.pieces.extend(_members(op, av, self.ignore_case)[:2])
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
                self.collect(av[2])
                self.pieces.append(self.example(av[2]))
            elif op is sre.SUBPATTERN:
                self.collect(av[-1])
            elif op is sre.ATOMIC_GROUP:
                self.collect(av)
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                self.collect(av[1])
            elif op is sre.BRANCH:
                for alternative in av[1]:
                    self.collect(alternative)
            elif op is sre.GROUPREF_EXISTS:
                self.collect(av[1])
                if av[2]:
                    self.collect(av[2])
        if literal:
            self.pieces.append("".join(literal))


def _sequences(items, limit: int = _MAX_SEQUENCES) -> list[list]:
    """The pattern as flat sequences of items, groups opened and each alternative of a branch its own."""
    sequences: list[list] = [[]]
    for op, av in items:
        if op is sre.SUBPATTERN:
            tails = _sequences(av[-1], limit)
        elif op is sre.ATOMIC_GROUP:
            tails = _sequences(av, limit)
        elif op is sre.BRANCH:
            tails = [seq for alternative in av[1] for seq in _sequences(alternative, limit)]
        else:
            tails = [[(op, av)]]
        sequences = [head + tail for head in sequences for tail in tails][:limit]
    return sequences


@dataclass(frozen=True)
class Probe:
    """An adversarial input of any length: `head`, then `unit` repeated to the length, then `tail`."""

    unit: str | bytes
    head: str | bytes = ""
    tail: str | bytes = ""

    def text(self, n: int) -> str | bytes:
        body = n - len(self.head) - len(self.tail)
        return self.head + (self.unit * (body // len(self.unit) + 1))[:max(body, 0)] + self.tail

    def __str__(self) -> str:
        head = f"{self.head!r} + " if self.head else ""
        tail = f" + {self.tail!r}" if self.tail else ""
        return f"{head}{self.unit!r} x n{tail}"


def probes(pattern: re.Pattern) -> list[Probe]:
    """Whitespace runs; every near-match prefix, literal and class member repeated, alone and followed by a space;
    each prefix with a long run of spaces after it and the prefix again (a lazy part with a lookahead that scans
    the run from every position inside it)."""
    text = pattern.pattern if isinstance(pattern.pattern, str) else pattern.pattern.decode("latin-1")
    tree = sre_parse.parse(text, pattern.flags & ~re.LOCALE)
    shapes = _Shapes(pattern.flags)
    prefixes: list[str] = []
    for sequence in _sequences(list(tree)):
        # Cut between items, not inside a literal word: "<title" is one step, not six.
        cuts = [i for i in range(1, len(sequence) + 1)
                if i == len(sequence) or not (sequence[i - 1][0] is sre.LITERAL and sequence[i][0] is sre.LITERAL)]
        prefixes.extend(shapes.example(sequence[:i], least) for i in cuts for least in (False, True))
    shapes.collect(list(tree))
    units: list[str] = []
    for piece in [*_WHITESPACE, *prefixes, *shapes.pieces]:
        for unit in (piece, piece + " ") if piece and not piece.isspace() else (piece,):
            if unit and unit not in units:
                units.append(unit)
    found = [Probe(unit) for unit in units[:_MAX_UNITS]]
    framing = list(dict.fromkeys(p for p in prefixes if p.strip()))
    if len(framing) > _MAX_FRAMED:  # spread over the pattern, not its first few items only
        framing = [framing[i * len(framing) // _MAX_FRAMED] for i in range(_MAX_FRAMED)]
    found += [Probe(" ", head=prefix, tail=prefix) for prefix in framing]
    if isinstance(pattern.pattern, bytes):
        return [Probe(*(part.encode("latin-1") for part in (p.unit, p.head, p.tail))) for p in found
                if all(ord(c) < 256 for c in p.unit + p.head + p.tail)]
    return found


# --- timing ------------------------------------------------------------------------------------------------


class _OverCap(Exception):
    pass


def _runner(site: Site) -> Callable[[str | bytes], object]:
    if site.scans:
        return lambda text: sum(1 for _ in site.pattern.finditer(text))
    return lambda text: (site.pattern.match(text), site.pattern.fullmatch(text))


def _cpu_seconds(run: Callable, text: str | bytes) -> float | None:
    """CPU seconds of one run; None past CAP_S (cut short by a profiling timer where the caller is the main
    thread — the regex engine checks for signals as it goes)."""
    capped = threading.current_thread() is threading.main_thread()
    if capped:
        def over_cap(_signum, _frame):
            raise _OverCap

        previous = signal.signal(signal.SIGPROF, over_cap)
        signal.setitimer(signal.ITIMER_PROF, CAP_S)
    started = time.thread_time()
    try:
        run(text)
    except _OverCap:
        return None
    finally:
        if capped:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, previous)
    spent = time.thread_time() - started
    return None if spent > CAP_S else spent


def _best(run: Callable, text: str | bytes, runs: int, under: float) -> float | None:
    """The least of up to `runs` runs, stopping at the first under `under` (noise only ever adds time)."""
    best = None
    for _ in range(runs):
        spent = _cpu_seconds(run, text)
        if spent is None:
            return None
        best = spent if best is None else min(best, spent)
        if best < under:
            break
    return best


def superlinear(run: Callable[[str | bytes], object], probe: Probe) -> str | None:
    """The timings that show `run` super-linear on `probe`'s inputs (a description), or None.

    Screening: a run at N_SCREEN and, unless that one was so fast that even 16x would stay under SCREEN_FLOOR_S,
    at N_SCREEN_LARGE. Growth by more than SUSPECT_RATIO above the floor is confirmed on 100k, 400k and 1.6M
    characters (best of three runs each): flagged when both steps grow by more than RATIO_LIMIT. Both, because a
    linear pattern whose working set outgrows a cache at one step (20 -> 80 ns a character between 100k and 400k)
    grows ~14x there. A run past CAP_S is flagged at once."""

    def said(*timings: tuple[int, float | None]) -> str:
        return ", ".join(f"over {CAP_S} s at n={n}" if t is None else f"{t:.3f} s at n={n}" for n, t in timings)

    screen = _cpu_seconds(run, probe.text(N_SCREEN))
    if screen is None:
        return said((N_SCREEN, None))
    if 16 * screen < SCREEN_FLOOR_S:
        return None
    larger = _cpu_seconds(run, probe.text(N_SCREEN_LARGE))
    if larger is None:
        return said((N_SCREEN, screen), (N_SCREEN_LARGE, None))
    if larger < SCREEN_FLOOR_S or larger < SUSPECT_RATIO * screen:
        return None
    timings: list[tuple[int, float | None]] = []
    for n in (N_SMALL, N_LARGE, N_HUGE):
        under = RATIO_LIMIT * timings[-1][1] if timings else 0.0
        timings.append((n, _best(run, probe.text(n), 3, under)))
        if timings[-1][1] is None:
            return said(*timings)
        if len(timings) > 1 and (timings[-1][1] < CONFIRM_FLOOR_S or timings[-1][1] < under):
            return None
    return said(*timings)


def check_site(site: Site, found: list[Probe] | None = None) -> tuple[int, Flagged | None]:
    """(probes tried, a Flagged for the first probe on which the site is super-linear, or None)."""
    run = _runner(site)
    found = probes(site.pattern) if found is None else found
    for tried, probe in enumerate(found, 1):
        timings = superlinear(run, probe)
        if timings is not None:
            use = "finditer" if site.scans else "match"
            return tried, Flagged(site.where, site.pattern.pattern, use, str(probe), timings)
    return len(found), None


def scan(sites: list[Site] | None = None) -> Scan:
    result = Scan(sites=pattern_sites() if sites is None else sites)
    for site in result.sites:
        tried, flagged = check_site(site)
        result.inputs += tried
        if flagged is not None:
            result.flagged.append(flagged)
    return result


def measure(out_dir: Path, quick: bool) -> dict:
    """The same scan in quick and full runs: it is CPU-bound and takes seconds."""
    result = scan()
    figures = {
        "regex_superlinear": len(result.flagged),
        "regex_patterns_checked": len(result.sites),
        "regex_inputs_checked": result.inputs,
        "regex_flagged": [str(f) for f in result.flagged],
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "regex_linear.json").write_text(json.dumps(figures, indent=2))
    return figures
