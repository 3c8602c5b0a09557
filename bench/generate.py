"""Generate a knowledge base of N facts for benchmarks: a synthetic organization that keeps to the schema.

    python bench/generate.py 100000 /tmp/kb-100k
    python bench/generate.py --records 100000 /tmp/records-100k.jsonl   # the same, as kg import records

Entities are about a tenth of the facts; every fact fits its predicate's domain and range and the
People whitelist. They are written through the normal write path (journal, index and commit), without
the per-fact checks an import makes, in transactions of at most 10,000 entities or facts each, so that
memory stays bounded as the size grows (a million facts: see bench/run.py's docstring). The records are
written as they are drawn.
"""

import random
import sys
import time
from itertools import islice
from pathlib import Path

from pyoxigraph import Literal, NamedNode

from kgrdf import autoconfirm, clock, model, vocab
from kgrdf import schema as schema_mod
from kgrdf.kb import KnowledgeBase

TYPE_SHARE = {
    "person": 12,
    "team": 3,
    "process": 4,
    "step": 14,
    "gate": 3,
    "channel": 3,
    "system": 4,
    "repo": 10,
    "service": 8,
    "environment": 3,
    "feature": 12,
    "decision": 8,
    "principle": 2,
    "lesson": 6,
    "organization": 6,
    "actor": 2,
}
CHUNK = 10_000  # entities or facts to a write transaction: bounds each patch, index load and commit
STATUSES = ["confirmed"] * 6 + ["proposed"] * 3 + ["rejected"]
AUDIENCES = ["public"] * 4 + ["owner"] * 3 + ["channel:general", "workspace:acme", "dm:jo,sam"]


def entities(n_entities: int, rng: random.Random) -> dict[str, list[model.Entity]]:
    total = sum(TYPE_SHARE.values())
    out: dict[str, list[model.Entity]] = {}
    for type_key, share in TYPE_SHARE.items():
        count = max(2, n_entities * share // total)
        out[type_key] = [
            model.Entity(
                f"{type_key}/{type_key[:3]}-{i:06d}",
                "",
                type_key,
                f"{type_key.title()} {i} {rng.choice(['Alpha', 'Beta', 'Gamma', 'Delta', 'Omega'])}",
                aliases=[f"{type_key[:3]}{i}"],
            )
            for i in range(count)
        ]
    return out


def synthetic_facts(pool, n_facts: int, rng: random.Random, schema):
    """(subject, predicate, target entity or None, value literal or None, names a person) for n
    distinct facts that fit their predicate's domain, range and the People whitelist."""
    person_types = {"person", "actor"}
    predicates = list(schema.predicates.values())
    seen = set()
    made = 0
    while made < n_facts:
        pred = rng.choice(predicates)
        domain = sorted(pred.domain) or [t for t in TYPE_SHARE if t not in person_types]
        subject_type = rng.choice(domain)
        subject = rng.choice(pool[subject_type])
        target_entity = value = None
        if pred.takes_entity:
            targets = sorted(pred.range) or [t for t in TYPE_SHARE if t not in person_types]
            target_type = rng.choice(targets)
            if pred.key == "alias_of":  # one thing's two names: two entities of one kind (kg:OneKindPredicate)
                target_type = subject_type
            target_entity = rng.choice(pool[target_type])
            if target_entity.id == subject.id:
                continue
        else:
            target_type = None
            if pred.value_type == vocab.XSD_DATE.value:
                value = Literal(f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}", datatype=vocab.XSD_DATE)
            else:
                value = Literal(f"{pred.key} value {rng.randint(0, 10**6)}")
        names_person = subject_type in person_types or target_type in person_types
        if names_person and not pred.person_ok:
            continue
        key = (subject.id, pred.key, target_entity.id if target_entity else value.value)
        if key in seen:
            continue
        seen.add(key)
        made += 1
        yield subject, pred, target_entity, value, names_person


def generate(path: Path, n_facts: int, seed: int = 7, statuses=STATUSES, chunk: int = CHUNK) -> KnowledgeBase:
    """A knowledge base of ``n_facts`` synthetic facts, each given a status drawn from ``statuses``
    (["proposed"]: every fact waits for review, as for the batch benchmark).

    Written as several transactions of at most ``chunk`` entities or facts each, the entities first,
    so that each journal patch, index load and commit is bounded whatever ``n_facts`` is. The facts
    are drawn one by one as they are staged, so the same seed gives the same facts at any ``chunk``.
    """
    rng = random.Random(seed)
    kb = KnowledgeBase.create(path)
    schema = schema_mod.core()
    pool = entities(max(20, n_facts // 10), rng)
    everyone = [entity for group in pool.values() for entity in group]
    for entity in everyone:
        entity.iri = vocab.entity_iri(kb.perspective, entity.id).value
    now = clock.iso(clock.now())
    for start in range(0, len(everyone), chunk):
        with kb.writing("generate") as writer:
            for entity in everyone[start : start + chunk]:
                writer.stage([], model.entity_quads(entity, kb.perspective, schema))
            writer.validated = True  # synthetic data that keeps to the schema: no per-fact checks
    facts = synthetic_facts(pool, n_facts, rng, schema)
    used_ids: set[str] = set()  # fact ids have 30 bits: at a million facts, some repeat across transactions
    for _ in range(0, n_facts, chunk):
        with kb.writing("generate") as writer:
            stage_facts(kb, writer, islice(facts, chunk), rng, statuses, schema, now, used_ids)
            writer.validated = True
    return kb


def stage_facts(kb, writer, facts, rng: random.Random, statuses, schema, now: str, used_ids: set[str]) -> None:
    """Stage one transaction's facts, each with a fact id minted for this transaction and not in
    ``used_ids`` (which it adds to)."""
    minted = 0
    for subject, pred, target_entity, value, names_person in facts:
        fact_id = model.mint_fact_id(kb.replica, writer.seq, minted)
        while fact_id in used_ids:
            minted += 1
            fact_id = model.mint_fact_id(kb.replica, writer.seq, minted)
        used_ids.add(fact_id)
        minted += 1
        status = rng.choice(statuses)
        fact = model.Fact(
            id=fact_id,
            iri=vocab.fact_iri(kb.perspective, fact_id).value,
            subject=subject.iri,
            predicate=pred.iri,
            target=NamedNode(target_entity.iri) if target_entity else value,
            status=status,
            authority="user" if pred.key.startswith("stated_") else rng.choice(["user", "observed", "stakeholder"]),
            sensitivity="personal" if names_person else "internal",
            sources=[model.Source(rng.choice(["slack", "report", "ledger", "pr"]), f"ref-{rng.randint(0, 10**6)}")],
            observed_at=now,
            observations=rng.randint(1, 4),
            recorded_at=now,
            retired_at=now if status == "rejected" else None,
            prevents_rework=rng.random() < 0.05,
            perspective=vocab.perspective_iri(kb.perspective).value,
            order=rng.randint(1, 9) if pred.ordered else None,
        )
        fact.hearings = [
            model.Hearing(
                model.hearing_iri(fact.iri, writer.seq, 1), rng.choice(AUDIENCES), tuple(fact.sources), heard_at=now
            )
        ]
        writer.stage_new_fact(fact, model.fact_lines(fact, schema))


def records(path: Path, n_facts: int, seed: int = 7) -> None:
    """Write the same kind of synthetic organization as import records (JSON lines) for kg import."""
    import json

    rng = random.Random(seed)
    schema = schema_mod.core()
    pool = entities(max(20, n_facts // 10), rng)
    with open(path, "w", encoding="utf-8") as out:
        for group in pool.values():
            for entity in group:
                out.write(
                    json.dumps({"type": "entity", "id": entity.id, "name": entity.name, "aliases": entity.aliases})
                    + "\n"
                )
        for subject, pred, target_entity, value, _ in synthetic_facts(pool, n_facts, rng, schema):
            record = {
                "type": "fact",
                "subject": subject.id,
                "predicate": pred.key,
                "sources": [f"{rng.choice(['slack', 'report', 'ledger', 'pr'])}:ref-{rng.randint(0, 10**6)}"],
            }
            if pred.key.startswith("stated_"):
                record["authority"] = "user"
            if pred.key == autoconfirm.CLAIM:  # a claim records who said it
                record["said_by"] = pool["actor"][len(record["sources"][0]) % len(pool["actor"])].id
            if target_entity:
                record["object"] = target_entity.id
            else:
                record["value"] = value.value
            if pred.ordered:
                record["order"] = rng.randint(1, 9)
            out.write(json.dumps(record) + "\n")


def main() -> None:
    args = sys.argv[1:]
    if len(args) not in (2, 3) or (len(args) == 3) != (args[0] == "--records") or not args[-2].isdigit():
        sys.exit("usage:\n" + __doc__.split("\n\n")[1].rstrip())
    if sys.argv[1] == "--records":
        n_facts, path = int(sys.argv[2]), Path(sys.argv[3])
        records(path, n_facts)
        print(f"wrote {n_facts} fact records and their entities to {path}")
        return
    n_facts, path = int(sys.argv[1]), Path(sys.argv[2])
    start = time.perf_counter()
    generate(path, n_facts)
    print(f"generated {n_facts} facts at {path} in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
