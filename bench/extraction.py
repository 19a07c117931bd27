"""What the offline extractor finds, against labels, before (a git ref, default ``main``) and after
(this checkout), in the same run.

Corpora (nothing is copied into the repository; ``../shared/bench`` is read in place):

- **WNUT17** (CC BY 4.0): social-media messages with person and location spans; tokens joined
  back with spaces, one save per message. Person / Location precision and recall by exact name
  (case-insensitive), micro-averaged. The rules were tuned on the **dev** split
  (``emerging.dev.conll``, 1,009 messages); the **test** split (``emerging.test.annotated``,
  1,287 messages) is held out and reported beside it.
- **MADial en** (``madial/MADial-Bench-en-memory.json``, MIT): 160 short English memories with
  their persons labelled by hand in ``MADIAL_EN_NAMES`` (no named places).
- **Chinese, hand-labelled** (``bench/data/extraction_zh.jsonl``): 40 sentences written for this
  bench (persons and places labelled by the writer), plus the 171 MADial-Bench zh memories
  (``madial/MADial-Bench-zh-memory.json``, MIT) with their persons labelled by hand in
  ``MADIAL_ZH_PERSONS`` (no named places there: 阿拉斯加 is a dog).
- **A real changelog** (``--changelog``, default Python's ``NEWS.gz`` from the python3.11 Debian
  package): the first ``--entries`` (216) entries, each saved as a positional record with the
  offline defaults, topics chosen as an import would (each chosen path becomes known to the next
  save). Persons are checked against the ``Patch by ...`` credits (the only labels a changelog
  has); "common-word persons" are persons whose every word is a dictionary word by
  lemminflect's lexicon and not a given name of the census list either extractor may use.
- **Long texts**: the three ``shared/seeds`` documents (Chinese with code), one save each.

Per corpus and extractor: concepts per 1,000 characters, and the share of concepts that are
stop words, verbs (a lone word the lexicon reads as a verb and not a noun, or an inflected verb
form), numbers or code tokens (``a_b``, ``a.b``, ``f()``, ``--flag``, ``gh-issue-1``). Nothing
is asserted::

    python -m bench.extraction --out bench/results/extraction.md
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
import time
import types
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from bench._common import ROOT, command_line, data_dir, git_rev, load_average, machine_line, table
from mnemoql.engine.providers import _english as english
from mnemoql.engine.providers.hashing import ENGLISH_STOPWORDS
from mnemoql.prompts.extraction import Extraction

DEFAULT_CHANGELOG = Path("/usr/share/doc/python3.11/NEWS.gz")
# MADial-Bench zh memories: the persons each names (hand-labelled; the rest name nobody).
# Gru is a film character in a title, 阿黄 and 阿拉斯加 are dogs, 王同学 / 李大爷 are a surname
# with a role and left out of both sides of the count.
MADIAL_ZH_NAMES = (
    "Lisa",
    "Bart",
    "Jimmy",
    "Sophia",
    "Oliver",
    "Eddie",
    "Jack",
    "Tom",
    "Adam",
    "Daniel",
    "Emily",
    "James",
    "红红",
    "小美",
)
MADIAL_ZH_SKIP = ("王同学", "李大爷")
_CREDIT = re.compile(
    r"(?:[Pp]atch(?:es)?|[Cc]ontributed|[Ww]ritten|[Rr]eported|[Ii]mplemented|[Ff]ixed)"
    r"\s+by\s+(?P<names>[^.:;()]+)"
)
_CODE = re.compile(r"[_()\[\]{}<>=/\\`*~]|::|^--?\w|\w\.\w|^gh-|^bpo-|[a-z][A-Z]")
_NUMBER = re.compile(r"^[\d.,:%x+-]+$")
Extract = Callable[[str], Extraction]
Choose = Callable[..., Any]


# ---------------------------------------------------------------- extractors


# The extractor's modules (binding.py: the offline topic rule; local.py held the word lists
# before hashing.py); a ref without one of the later ones (the name rules were split out of
# offline.py) simply lacks it.
_BASELINE_MODULES = (
    "engine/providers/offline.py",
    "engine/providers/_blocks.py",
    "engine/providers/_concepts.py",
    "engine/providers/_english.py",
    "engine/providers/_namewords.py",
    "engine/providers/_english_places.py",
    "engine/providers/_english_persons.py",
    "engine/providers/lexicons.py",
    "engine/providers/hashing.py",
    "engine/providers/local.py",
    "engine/binding.py",
)


def baseline(ref: str) -> tuple[Extract, Choose]:
    """The offline extractor and topic rule of ``ref``: its ``_BASELINE_MODULES`` in a private
    package, their imports of each other pointed into it."""
    tmp = Path(tempfile.mkdtemp(prefix="mnemoql-extraction-"))
    pkg = tmp / "baseline_offline"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    names = [Path(path).stem for path in _BASELINE_MODULES]
    ours = "|".join(re.escape(n) for n in names if n not in ("offline", "binding"))
    for path in _BASELINE_MODULES:
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{ref}:{path}"], capture_output=True, text=True
        )
        if shown.returncode != 0:
            continue
        src = re.sub(
            rf"from mnemoql\.engine\.providers import ({ours})\b",
            r"from baseline_offline import \1",
            shown.stdout,
        )
        src = re.sub(
            rf"from mnemoql\.engine\.providers\.({ours}) import",
            r"from baseline_offline.\1 import",
            src,
        )
        (pkg / f"{Path(path).stem}.py").write_text(src)
    sys.path.insert(0, str(tmp))
    try:
        spec = importlib.util.spec_from_file_location(
            "baseline_offline.offline", pkg / "offline.py"
        )
        assert spec and spec.loader
        pkg_mod = types.ModuleType("baseline_offline")
        pkg_mod.__path__ = [str(pkg)]
        sys.modules["baseline_offline"] = pkg_mod
        mod = importlib.util.module_from_spec(spec)
        sys.modules["baseline_offline.offline"] = mod
        spec.loader.exec_module(mod)
        bspec = importlib.util.spec_from_file_location(
            "baseline_offline.binding", pkg / "binding.py"
        )
        assert bspec and bspec.loader
        binding = importlib.util.module_from_spec(bspec)
        sys.modules["baseline_offline.binding"] = binding
        bspec.loader.exec_module(binding)
    finally:
        sys.path.remove(str(tmp))
    return mod.OfflineExtractor().extract_sync, binding.choose_topic


def current() -> tuple[Extract, Choose]:
    from mnemoql.engine.binding import choose_topic
    from mnemoql.engine.providers.offline import OfflineExtractor

    return OfflineExtractor().extract_sync, choose_topic


# ---------------------------------------------------------------- corpora


@dataclass(slots=True)
class Item:
    text: str
    persons: set[str] | None = None  # None: not labelled
    locations: set[str] | None = None
    skip: set[str] = field(default_factory=set)  # names counted on neither side


def _fold(name: str) -> str:
    return " ".join(name.casefold().split())


def wnut17(path: Path) -> list[Item]:
    items: list[Item] = []
    tokens: list[str] = []
    tags: list[str] = []

    def flush() -> None:
        if not tokens:
            return
        spans: dict[str, set[str]] = {"person": set(), "location": set()}
        cur: list[str] = []
        kind = ""
        for tok, tag in [*zip(tokens, tags, strict=True), ("", "O")]:
            if tag.startswith("I-") and cur and tag[2:] == kind:
                cur.append(tok)
                continue
            if cur and kind in spans:
                spans[kind].add(_fold(" ".join(cur)))
            cur, kind = ([tok], tag[2:]) if tag.startswith(("B-", "I-")) else ([], "")
        items.append(Item(" ".join(tokens), spans["person"], spans["location"]))
        tokens.clear()
        tags.clear()

    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) < 2 or not line.strip():
            flush()
            continue
        tokens.append(parts[0])
        tags.append(parts[-1].strip())
    flush()
    return items


def chinese(root: Path) -> list[Item]:
    items = []
    for line in (ROOT / "bench" / "data" / "extraction_zh.jsonl").read_text().splitlines():
        row = json.loads(line)
        items.append(
            Item(
                row["text"],
                {_fold(p) for p in row["persons"]},
                {_fold(p) for p in row["locations"]},
            )
        )
    for line in (root / "madial" / "MADial-Bench-zh-memory.json").read_text().splitlines():
        if not line.strip():
            continue
        event = next(iter(json.loads(line).values()))["event"]
        persons = {
            _fold(n)
            for n in MADIAL_ZH_NAMES
            if re.search(rf"(?<![A-Za-z]){re.escape(n)}(?![A-Za-z])", event)
        }
        skip = {_fold(n) for n in MADIAL_ZH_SKIP if n in event} | {"王", "李", "gru"}
        items.append(Item(event, persons, set(), skip))
    return items


# MADial-Bench en memories: the persons named (hand-labelled). Left out of both sides: cartoon
# and book characters in titles ("Tom and Jerry", "Sherlock Holmes", "Robinson Crusoe"), a dog
# (Ah Huang) and a surname with a role ("Old Li").
MADIAL_EN_NAMES = (
    "Lisa",
    "Bart",
    "Jimmy",
    "Sophia",
    "Oliver",
    "Eddie",
    "Jack",
    "Adam",
    "Daniel",
    "Emily",
    "James",
    "Mingming",
    "Honghong",
    "Haohao",
    "Xiao Zhang",
    "Wang",
    "Xiaomei",
)
MADIAL_EN_SKIP = (
    "tom",
    "jerry",
    "sherlock holmes",
    "sherlock",
    "holmes",
    "robinson crusoe",
    "robinson",
    "crusoe",
    "ah huang",
    "huang",
    "old li",
    "li",
    "gru",
    "uncle",
    "grandpa",
    "grandma",
    "mom",
    "dad",
)


def madial_en(root: Path) -> list[Item]:
    items = []
    for line in (root / "madial" / "MADial-Bench-en-memory.json").read_text().splitlines():
        if not line.strip():
            continue
        event = next(iter(json.loads(line).values()))["event"]
        persons = {_fold(n) for n in MADIAL_EN_NAMES if re.search(rf"\b{re.escape(n)}\b", event)}
        items.append(Item(event, persons, set(), set(MADIAL_EN_SKIP)))
    return items


def changelog_entries(path: Path, limit: int) -> list[str]:
    """The first ``limit`` bullet entries of a NEWS / CHANGELOG file, reflowed to one paragraph
    each (their line breaks are layout)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    entries: list[list[str]] = []
    for line in lines:
        if re.match(r"^[-*] \S", line):
            entries.append([line[2:].strip()])
        elif entries and line.startswith("  ") and line.strip():
            entries[-1].append(line.strip())
        elif entries and entries[-1] and not line.strip():
            entries[-1].append("")
        if len(entries) > limit:
            break
    return [" ".join(w for w in e if w).strip() for e in entries[:limit]]


def credits(entry: str) -> set[str]:
    found: set[str] = set()
    for m in _CREDIT.finditer(entry):
        for name in re.split(r",\s*|\s+and\s+", m.group("names")):
            name = name.strip()
            if name and name[0].isupper() and len(name.split()) <= 4:
                found.add(_fold(name))
    return found


def seeds() -> list[Item]:
    return [
        Item(p.read_text(encoding="utf-8"))
        for p in sorted(Path(data_dir().parent / "seeds").glob("*.txt"))
    ]


# ---------------------------------------------------------------- scoring


@dataclass(slots=True)
class Score:
    tp: Counter[str] = field(default_factory=Counter)
    predicted: Counter[str] = field(default_factory=Counter)
    gold: Counter[str] = field(default_factory=Counter)
    chars: int = 0
    saves: int = 0
    concepts: Counter[str] = field(default_factory=Counter)  # kind -> count
    common_persons: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    def pr(self, kind: str) -> tuple[float | str, float | str]:
        p = self.tp[kind] / self.predicted[kind] if self.predicted[kind] else "-"
        r = self.tp[kind] / self.gold[kind] if self.gold[kind] else "-"
        return p, r


def concept_kind(name: str) -> str:
    """stop | verb | number | code | other."""
    words = name.split()
    low = name.casefold()
    if _NUMBER.match(name):
        return "number"
    if any(_CODE.search(w) for w in words):
        return "code"
    if len(words) == 1 and (low in ENGLISH_STOPWORDS or english.is_stop(low)):
        return "stop"
    if len(words) == 1 and name.isascii():
        found = english.readings(low)
        if "VERB" in found and ("NOUN" not in found or english.inflected_verb(low)):
            return "verb"
    return "other"


def common_word_person(name: str, given: frozenset[str]) -> bool:
    words = name.split()
    return all(
        w.isascii() and english.readings(w.casefold()) and w.casefold() not in given for w in words
    )


def score(
    extract: Extract, items: list[Item], given: frozenset[str]
) -> tuple[Score, list[Extraction]]:
    s = Score()
    out = []
    start = time.perf_counter()
    for item in items:
        result = extract(item.text)
        out.append(result)
        s.saves += 1
        s.chars += len(item.text)
        for kind, gold, found in (
            ("person", item.persons, result.persons),
            ("location", item.locations, result.locations),
        ):
            names = {_fold(e.name) for e in found} - item.skip
            if kind == "person":
                for e in found:
                    if common_word_person(e.name, given):
                        s.common_persons[e.name] += 1
            if gold is None:
                continue
            gold = gold - item.skip
            s.predicted[kind] += len(names)
            s.gold[kind] += len(gold)
            s.tp[kind] += len(names & gold)
        for c in result.concepts:
            s.concepts[concept_kind(c.name)] += 1
    s.seconds = time.perf_counter() - start
    return s, out


def topics(
    items: list[Item], extractions: list[Extraction], choose_topic: Choose
) -> tuple[int, int, str, float]:
    """(distinct topic paths, saves with none, the biggest, its share of saves) for saves in
    this order."""
    known: list[str] = []
    chosen: Counter[str] = Counter()
    today = date(2026, 1, 1)
    for item, ex in zip(items, extractions, strict=True):
        choice = choose_topic(item.text, ex, known, today)
        path = choice.draft.path if choice else ""
        chosen[path] += 1
        if choice:
            parts = path.split("->")
            for i in range(1, len(parts) + 1):
                if (p := "->".join(parts[:i])) not in known:
                    known.append(p)
    none = chosen.pop("", 0)
    if not chosen:
        return 0, none, "-", 0.0
    top, n = chosen.most_common(1)[0]
    return len(chosen), none, top, n / max(1, len(items))


def given_names() -> frozenset[str]:
    try:
        from mnemoql.engine.providers.lexicons import lexicons

        return lexicons().given
    except ImportError:
        return frozenset()


def rows_for(label: str, scores: dict[str, Score]) -> Iterator[list[object]]:
    for who, s in scores.items():
        total = sum(s.concepts.values())
        per_k = 1000 * total / max(1, s.chars)

        def share(*kinds: str, s: Score = s, total: int = total) -> str:
            return f"{sum(s.concepts[k] for k in kinds) / total:.1%}" if total else "-"

        pp, pr = s.pr("person")
        lp, lr = s.pr("location")
        yield [
            label,
            who,
            s.saves,
            pp,
            pr,
            lp,
            lr,
            f"{per_k:.2f}",
            share("stop", "verb"),
            share("number"),
            share("code"),
            sum(s.common_persons.values()),
            f"{1000 * s.seconds / max(1, s.saves):.1f}",
        ]


def _f(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline", default="main", help="git ref of the 'before' extractor")
    p.add_argument("--no-baseline", action="store_true")
    p.add_argument("--changelog", type=Path, default=DEFAULT_CHANGELOG)
    p.add_argument("--entries", type=int, default=216)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    load_at_start = load_average()
    extractors: dict[str, tuple[Extract, Choose]] = {}
    if not args.no_baseline:
        extractors[f"before ({args.baseline})"] = baseline(args.baseline)
    extractors["after (this checkout)"] = current()
    given = given_names()
    root = data_dir()
    corpora: dict[str, list[Item]] = {
        "WNUT17 dev (en, tuned on)": wnut17(root / "wnut17" / "emerging.dev.conll"),
        "WNUT17 test (en, held out)": wnut17(root / "wnut17" / "emerging.test.annotated"),
        "MADial en (persons hand-labelled)": madial_en(root),
        "zh hand-labelled + MADial zh": chinese(root),
    }
    entries = changelog_entries(args.changelog, args.entries) if args.changelog.exists() else []
    if entries:
        corpora[f"changelog ({args.changelog.name}, {len(entries)} entries)"] = [
            Item(e, credits(e), None) for e in entries
        ]
    corpora["seeds (3 long zh docs)"] = seeds()
    corpora["one character x1500"] = [Item("y" * 1500)]
    rows: list[list[object]] = []
    side: list[list[object]] = []
    topic_rows: list[list[object]] = []
    common: dict[str, Counter[str]] = {}
    for label, items in corpora.items():
        scores: dict[str, Score] = {}
        for who, (extract, choose) in extractors.items():
            s, out = score(extract, items, given)
            scores[who] = s
            if label.startswith(("changelog", "one character")):
                n, none, top, share = topics(items, out, choose)
                topic_rows.append([label, who, n, none, top, f"{share:.1%}"])
            if label.startswith("changelog"):
                common[who] = s.common_persons
            print(f"{label} / {who}: {s.saves} saves in {s.seconds:.1f}s", file=sys.stderr)
        rows.extend(found := list(rows_for(label, scores)))
        if len(found) == 2:  # before and after: side by side
            before, after = found
            side.append([label, *(f"{_f(before[i])} / {_f(after[i])}" for i in range(3, 9))])
    headers = [
        "corpus",
        "extractor",
        "saves",
        "Person P",
        "Person R",
        "Location P",
        "Location R",
        "concepts / 1k chars",
        "stop+verb",
        "numbers",
        "code",
        "common-word persons",
        "ms / save",
    ]
    lines = [
        "# Offline extraction",
        "",
        f"`{command_line()}` on {git_rev()}; {machine_line(load_at_start)}",
        "",
        "Before / after, side by side:",
        "",
        table([headers[0], *headers[3:9]], side),  # the columns the side rows hold
        "",
        "Every figure:",
        "",
        table(headers, rows),
        "",
        "Topics an import would choose (offline defaults, each path known to the next save):",
        "",
        table(
            ["corpus", "extractor", "topic paths", "saves with none", "biggest", "its share"],
            topic_rows,
        ),
        "",
        "Persons named by common words in the changelog (name: saves):",
        "",
    ]
    for who, found in common.items():
        shown = ", ".join(f"{n}: {c}" for n, c in found.most_common(15)) or "none"
        lines.append(f"- {who}: {shown}")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
