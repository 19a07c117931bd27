"""What a save writes, planned from its extraction: the vectors, the entities merged with the
stored ones, and the relations.

``embed`` embeds a save's texts in one call (event summaries, entity names, chunks);
``merge_entities`` matches each extracted entity to a stored one by normalised name or alias,
a concept also by vector and the concept judge (SPEC §1.3.4b), and folds one entity named
twice in one extraction into one draft; ``relations`` lists the relations the extraction
states. ``engine.ingest`` runs these steps, the embedding outside its save lock and the merge
under it, and hands the ``SavePlan`` to the store. Kept apart from ``engine.ingest`` so the
pipeline reads as its steps and the rules of each step read in one place.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mnemoql.engine.drafts import EntityDraft, RelationDraft
from mnemoql.engine.errors import MnemoError
from mnemoql.engine.models import Chunk, Entity, EntityLabel, Vector
from mnemoql.engine.providers.base import ConceptJudge, Embedder
from mnemoql.engine.store.base import Store
from mnemoql.engine.text import chunk_ranges, normalise_name, text_hash
from mnemoql.prompts.extraction import EntityItem, Extraction

log = logging.getLogger(__name__)

CONCEPT_CANDIDATES = 5
CONCEPT_MIN_COSINE = 0.75


@dataclass(slots=True)
class Prepared:
    """A save's vectors, by event ref, entity ref, and chunk (``embed``)."""

    summaries: dict[str, Vector]
    names: dict[str, Vector]
    chunks: list[Chunk]


async def embed(embedder: Embedder, content: str, ex: Extraction) -> Prepared:
    """The vectors of a save: its events' summaries, its entities' names and its chunks."""
    ranges = chunk_ranges(len(content))
    chunk_texts = [content[s:e] for s, e in ranges]
    entity_names = [e.name for e in (*ex.persons, *ex.concepts, *ex.locations)]
    summaries = [e.summary for e in ex.events]
    texts = [*summaries, *entity_names, *chunk_texts]
    unique = list(dict.fromkeys(texts))
    matrix = await embedder.embed(unique, "passage") if unique else np.zeros((0, 0), np.float32)
    row = {t: i for i, t in enumerate(unique)}

    def vec(text: str) -> Vector:
        found: Vector = matrix[row[text]]
        return found

    chunks = [
        Chunk("", i, s, e, content[s:e], text_hash(content[s:e]), vec(content[s:e]))
        for i, (s, e) in enumerate(ranges)
    ]
    return Prepared(
        summaries={e.ref: vec(e.summary) for e in ex.events},
        names={e.ref: vec(e.name) for e in (*ex.persons, *ex.concepts, *ex.locations)},
        chunks=chunks,
    )


async def merge_entities(
    store: Store, judge: ConceptJudge | None, judge_threshold: float, ex: Extraction, prep: Prepared
) -> tuple[list[EntityDraft], dict[str, str]]:
    """Drafts for the store, and ref -> canonical ref for refs folded into another."""
    drafts: list[EntityDraft] = []
    alias_of: dict[str, str] = {}
    groups: tuple[tuple[EntityLabel, list[EntityItem]], ...] = (
        ("Person", ex.persons),
        ("Concept", ex.concepts),
        ("Location", ex.locations),
    )
    for label, items in groups:
        seen: dict[str, EntityDraft] = {}
        keys = {normalise_name(n) for it in items for n in (it.name, *it.aliases) if n.strip()}
        existing = await store.find_entities(label, keys) if keys else []
        by_key: dict[str, Entity] = {}
        for ent in existing:
            for n in (ent.name, *ent.aliases):
                by_key.setdefault(normalise_name(n), ent)
        for it in items:
            names = [n for n in (it.name, *it.aliases) if n.strip()]
            norm = [normalise_name(n) for n in names]
            twin = next((seen[k] for k in norm if k in seen), None)
            if twin is not None:  # the same entity twice in one extraction
                alias_of[it.ref] = twin.ref
                add_aliases(twin, names)
                continue
            match = next((by_key[k] for k in norm if k in by_key), None)
            if match is None and label == "Concept":
                match = await align(store, judge, judge_threshold, it, prep.names[it.ref])
            draft = EntityDraft(
                ref=it.ref,
                label=label,
                name=it.name.strip(),
                aliases=[a.strip() for a in it.aliases if a.strip()],
                description=it.description or None,
                embedding=prep.names[it.ref],
            )
            if match is not None:
                draft.merge_into = match.id
                known = {normalise_name(n) for n in (match.name, *match.aliases)}
                draft.aliases = [n for n in dict.fromkeys(names) if normalise_name(n) not in known]
                draft.embedding = None  # merged nodes keep their vector
            drafts.append(draft)
            for k in norm:
                seen[k] = draft
    return drafts, alias_of


async def align(
    store: Store,
    judge: ConceptJudge | None,
    judge_threshold: float,
    item: EntityItem,
    vector: Vector,
) -> Entity | None:
    """Concept alignment (SPEC §1.3.4b): vector candidates judged in order."""
    if judge is None:
        return None
    candidates = await store.similar_entities(
        "Concept", vector, CONCEPT_CANDIDATES, CONCEPT_MIN_COSINE
    )
    for ent, _cos in candidates:
        try:
            p = await judge.same_concept(
                (item.name, item.aliases, item.description),
                (ent.name, ent.aliases, ent.description),
            )
        except MnemoError as exc:  # a failing judge means "not the same"
            log.warning("concept judge failed for %s vs %s: %s", item.name, ent.id, exc.code)
            continue
        if p >= judge_threshold:
            return ent
    return None


def copy_chunk(c: Chunk) -> Chunk:
    """A chunk of its own for each event of a save (the store sets its ``event_id``)."""
    return Chunk(c.event_id, c.chunk_index, c.start, c.end, c.text, c.text_hash, c.embedding)


def add_aliases(draft: EntityDraft, names: Sequence[str]) -> None:
    known = {normalise_name(n) for n in (draft.name, *draft.aliases)}
    for n in names:
        if normalise_name(n) not in known:
            draft.aliases.append(n.strip())
            known.add(normalise_name(n))


def relations(ex: Extraction, alias_of: dict[str, str]) -> list[RelationDraft]:
    """The extraction's relations between refs, entities folded into another by their
    canonical ref, each once (HAS_ATTITUDE once per event)."""

    def ref(r: str) -> str:
        return alias_of.get(r, r)

    rels: dict[tuple[str, str, str, str], RelationDraft] = {}

    def add(draft: RelationDraft) -> None:
        key = (draft.type, draft.source, draft.target, str(draft.event_ref or ""))
        rels.setdefault(key, draft)

    for ev in ex.events:
        for p in ev.participants:
            props: dict[str, Any] = {"role": p.role} if p.role else {}
            add(RelationDraft("PARTICIPATED_IN", ref(p.person), ev.ref, props))
        for loc in ev.locations:
            add(RelationDraft("OCCURRED_AT", ev.ref, ref(loc)))
        for c in ev.concepts:
            add(RelationDraft("MENTIONS", ev.ref, ref(c)))
    first_event = ex.events[0].ref
    for att in ex.attitudes:
        add(
            RelationDraft(
                "HAS_ATTITUDE",
                ref(att.person),
                ref(att.target),
                {"attitude": att.attitude},
                event_ref=att.event or first_event,
            )
        )
    return list(rels.values())
