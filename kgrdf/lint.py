"""Upkeep (§8): what in the knowledge base needs a person's attention, each with the command that fixes it.

:func:`lint` runs every check over the whole knowledge base and returns one JSON-ready document;
:func:`text` renders it for a person. The matching of names is pure (:func:`near_identical`,
:func:`alias_collisions`, :func:`merge_suggestions`, :func:`orphan_fix`), so its tests are literals.

The document (``kg lint --json``)::

    {
      "now": "2027-06-01T00:00:00Z",                  # the time the checks used (KGRDF_NOW honoured)
      "settings": {"stale_days": 180, "retention_days": 365},
      "findings": [
        {
          "kind": "stale",                            # one of KINDS
          "message": "f-3k9x2a: Release process is announced in #deploys; last seen 2026-10-01, 243 days ago",
          "entities": ["process/release", "channel/deploys"],   # entity ids, the subject first
          "facts": ["f-3k9x2a"],                      # fact ids
          "fix": "kg confirm f-3k9x2a",               # a command line to paste
          "alternatives": ["kg reject f-3k9x2a"]      # other fixes, maybe none
        }
      ],
      "counts": {"stale": 1, "contradiction": 0, "overlap": 0, "orphan": 0, "alias_collision": 0,
                 "merge_suggestion": 0, "look_alike": 0, "retention": 0, "lost": 0}   # every kind, always
    }

Findings come in the order of KINDS, then by the ids they name. The kinds:

- ``stale``: a current confirmed fact last observed and last confirmed more than KGRDF_STALE_DAYS
  ago. Fix: confirm it again (``kg confirm`` on a confirmed fact refreshes last_confirmed_at), or
  reject it.
- ``contradiction``: two or more current confirmed values of a single-valued predicate (or of one
  key of a free-text attribute, ``KEY: VALUE``) on one subject. Fix: confirm the newest (confirming
  one value closes the others); or confirm another. An organization's attributes stand side by side
  (§9), and a confirmation closes none of them: the fix rejects the newest's nearest rival, the
  alternatives another (one at a time, until one is left).
- ``overlap``: two different confirmed values of a single-valued predicate on one subject whose
  valid times share an instant other than now, one of them closed or not begun yet (two values true
  at once in the past or to come, as ``kg facts --as-of`` would show them), however that came about:
  a supersede or a confirm back in time, a value confirmed ahead of its start, an import. Fix: end
  the earlier where the later begins (``kg supersede F --valid-to``), or begin the later where the
  earlier ends (``kg supersede F --valid-from``).
- ``orphan``: an entity in no current fact, proposed or confirmed, as subject or object. Fix: a
  ``kg propose`` template with a predicate the schema allows for its type (placeholders in capitals).
- ``alias_collision``: two people (person or actor) sharing a name or strong alias, or one's first
  name being the other's alias, with no current distinct_from or alias_of between them. Fix:
  propose that they are distinct (or, if they are one person, that one is an alias of the other).
- ``merge_suggestion``: two entities of one type whose names are equal but for case, spaces and
  punctuation, or one letter apart (names of 6 letters or more; a changed digit is a numbered
  sibling, not a typo), or whose name is the other's alias, with no distinct_from or alias_of
  between them. Fix: propose that the one with fewer facts is an alias of the other (nothing is
  moved); or that they are distinct.
- ``look_alike``: a name or strong alias that is not what it looks like: a word mixing letters of
  scripts that look alike (Latin, Cyrillic, Greek, Armenian: "Аcme" with a Cyrillic "А"), or a label
  that turns into another entity's label once look-alike letters are folded (Unicode compatibility
  forms, Cyrillic and Greek letters drawn like Latin ones) though they differ as written. Reported,
  not refused: a name may rightly mix scripts (words of two languages), and only a person can tell
  a spoof from a spelling. (Invisible and direction-changing characters are refused on writing.)
  Fix: ``kg add-entity`` with the name in one script; for one that looks like another entity's
  label (which the name in one script would then be too, making it ambiguous), ``alias_of`` when
  the two are one, else ``distinct_from``: either settles it.
- ``retention``: a fact naming a person not observed or confirmed again for KGRDF_RETENTION_DAYS,
  whatever its status: what ``kg expire`` deletes (a person's confirmation renews it, as it keeps a
  fact from being stale). Such a finding names ids only, never a name or a value, and no other
  finding shows the fact (it is left out of stale facts and contradictions).
- ``lost``: a confirmed value a correction closed, the correction rejected since, with no current
  fact saying the value again: a rejection does not reopen what it closed (a closed fact stays
  closed, on every replica), so the subject may be left holding nothing. Fix: propose the value
  again, for a person to confirm.

"Current" is what ``kg lookup`` shows: proposed or confirmed, not retired, true now.
"""

import functools
import re
import shlex
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import unquote

from kgrdf import clock, model, privacy, settings, vocab
from kgrdf.privacy import PERSON_TYPES

KINDS = (
    "stale",
    "contradiction",
    "overlap",
    "orphan",
    "alias_collision",
    "merge_suggestion",
    "look_alike",
    "retention",
    "lost",
)
LINT_SOURCE = "user:kg-lint"  # the source a fix proposes with: the person who runs it
MIN_FUZZY_LENGTH = 6  # shorter names one letter apart are too often different things ("api", "app")
SHOWN_PER_KIND = 20  # the text form lists this many findings of a kind; --json lists all


@dataclass
class Named:
    """An entity as lint sees it: id, type, name and strong aliases."""

    id: str
    type: str
    name: str
    aliases: list[str] = field(default_factory=list)


# --- the checks -----------------------------------------------------------------------------------


def lint(
    session, now: datetime | None = None, stale_days: int | None = None, retention_days: int | None = None
) -> dict:
    """Every finding in the knowledge base, as the document described above.

    The days default to the settings KGRDF_STALE_DAYS and KGRDF_RETENTION_DAYS (BadInput for a bad
    value); ``now`` to the clock (KGRDF_NOW).
    """
    now = now or clock.now()
    stale_days = stale_days or settings.get("KGRDF_STALE_DAYS")
    retention_days = retention_days or settings.get("KGRDF_RETENTION_DAYS")
    check = _Check(session, now)
    retention = check.retention(clock.days_before(now, retention_days), retention_days)
    past_retention = {f["facts"][0] for f in retention}
    contradictions = check.contradictions(skip=past_retention)
    # a value that contradicts another is that finding's, whose fix chooses: a stale one's fix (kg
    # confirm it) pasted first would choose it, and close the newer value it contradicts
    contradicting = {fact for f in contradictions for fact in f["facts"]}
    findings = (
        check.stale(clock.days_before(now, stale_days), skip=past_retention | contradicting)
        + contradictions
        + check.overlaps(skip=past_retention)
        + check.orphans()
        + check.alias_collisions()
        + check.merge_suggestions()
        + check.look_alikes()
        + retention
        + check.lost(skip=past_retention)  # (a retention finding names ids alone: no other shows the fact)
    )
    counts = {kind: 0 for kind in KINDS}
    for finding in findings:
        counts[finding["kind"]] += 1
    _as_pasted(findings, session)
    return {
        "now": clock.iso(now),
        "settings": {"stale_days": stale_days, "retention_days": retention_days},
        "findings": findings,
        "counts": counts,
    }


def contradictions(session, now: datetime | None = None, limit: int | None = None, held=None) -> dict:
    """kg lint's contradiction findings alone (the console's Briefing lists them): two or more
    current confirmed values of a single-valued predicate, a person's facts past retention left out
    as kg lint leaves them out. {"count": how many, "findings": the first ``limit`` (all without)}.
    ``held``: the session's measures (kgrdf.measures) when the caller has them open already."""
    now = now or clock.now()
    check = _Check(session, now)
    retained = clock.days_before(now, settings.get("KGRDF_RETENTION_DAYS"))
    if limit is None:
        groups = check.contradicting(held=held, retained=retained)
        return {"count": len(groups), "findings": _as_pasted(check.contradictions(groups=groups), session)}
    count, groups = check.contradicting(held=held, retained=retained, first=limit)
    return {"count": count, "findings": _as_pasted(check.contradictions(limit=limit, groups=groups), session)}


def _as_pasted(findings: list[dict], session) -> list[dict]:
    """Each fix and alternative names the session's knowledge base and perspective where a line
    without them reaches another: pasted as printed, it would change the default one instead."""
    words = session.kb.command_words()
    if words:
        for finding in findings:
            finding["fix"] = _command_for(finding["fix"], words)
            finding["alternatives"] = [_command_for(line, words) for line in finding["alternatives"]]
    return findings


def _command_for(line: str, words: list[str]) -> str:
    return " ".join([line, *map(shlex.quote, words)]) if line.startswith("kg ") else line


def _finding(kind: str, message: str, entities, facts, fix: str, alternatives=()) -> dict:
    return {
        "kind": kind,
        "message": message,
        "entities": list(entities),
        "facts": list(facts),
        "fix": fix,
        "alternatives": list(alternatives),
    }


def _command(*words: str) -> str:
    """A command line a shell reads back as these words."""
    return " ".join(shlex.quote(w) for w in words)


def _entity_id(iri: str) -> str:
    return unquote(vocab.id_of(iri))


class _Check:
    """The queries of one lint run, and what they share: the entities, the links between them, the
    number of facts naming an entity."""

    def __init__(self, session, now: datetime):
        self.session = session
        self.schema = session.schema
        self.now = vocab.datetime_literal(clock.iso(now))
        self.moment = now
        self._degrees: dict[str, int] = {}
        self._orphans: list[str] | None = None
        self.colliding: set[frozenset] = set()  # pairs of people an alias collision names already
        self._links: set[frozenset] | None = None

    @functools.cached_property
    def entities(self) -> dict[str, Named]:
        """Every entity with its name and aliases, by IRI (read once, by the first check that needs
        them); not an organization merged into another, whose survivor goes by its name."""
        found: dict[str, Named] = {}
        for row in self.session.values("lint-names", entities=self.session.entities_graph):
            if row.get("survivor") is not None:
                continue
            entity = found.get(row["entity"])
            if entity is None:
                entity_id = _entity_id(row["entity"])
                entity = found[row["entity"]] = Named(entity_id, entity_id.partition("/")[0], row["name"])
            if row["alias"] is not None and row["alias"] not in entity.aliases:
                entity.aliases.append(row["alias"])
        return found

    @functools.cached_property
    def by_id(self) -> dict[str, Named]:
        return {e.id: e for e in self.entities.values()}

    def _id(self, iri: str) -> str:
        return _entity_id(iri)  # an entity's id is its IRI's: no name is read for it

    def _shown(self, term: str) -> str:
        entity = self.entities.get(term)
        return entity.name if entity else term

    def _days_ago(self, when: str) -> int:
        return (self.moment - clock.parse_time(when)).days

    def degree(self, entity_id: str) -> int:
        """How many current facts name the entity."""
        if entity_id not in self._degrees:
            rows = self.session.values("lint-degree", entity=self.session.entity_iri(entity_id), now=self.now)
            self._degrees[entity_id] = rows[0]["facts"] if rows else 0
        return self._degrees[entity_id]

    def stale(self, before: datetime, skip=frozenset()) -> list[dict]:
        out = []
        rows = self.session.values("lint-stale", before=vocab.datetime_literal(clock.iso(before)), now=self.now)
        for row in rows:
            fact_id = vocab.id_of(row["fact"])
            predicate = self.schema.predicate_by_iri(row["predicate"])
            if fact_id in skip or predicate is None:
                continue
            seen = max(row["observedAt"], row["confirmedAt"] or "")
            sentence = predicate.reads(self._shown(row["subject"]), self._shown(row["object"]))
            ids = [self._id(row["subject"])] + ([self._id(row["object"])] if predicate.takes_entity else [])
            out.append(
                _finding(
                    "stale",
                    f"{fact_id}: {sentence}; last seen {seen[:10]}, {self._days_ago(seen)} days ago",
                    ids,
                    [fact_id],
                    _command("kg", "confirm", fact_id),
                    [_command("kg", "reject", fact_id)],
                )
            )
        return sorted(out, key=lambda f: (f["entities"], f["facts"]))

    def contradicting(self, skip=frozenset(), held=None, retained=None, first: int | None = None) -> list[tuple]:
        """Each contradiction's (entities, fact ids, subject, predicate IRI, rows), in the order kg
        lint lists them: by the entities it names, then its facts, newest first. The facts ``skip``
        names are left out, and with ``retained`` (a cut-off) those the measures find past retention
        then (kgrdf.measures). With ``first`` (and no ``skip``), the first ``first`` alone, read
        with how many there are: (count, groups)."""
        from kgrdf import measures

        single = {p.iri for p in self.schema.predicates.values() if p.single_valued}
        keyed = {p.iri for p in self.schema.predicates.values() if p.one_value and not p.single_valued}
        opened = measures.of(self.session) if held is None else None
        try:
            held = held or opened
            if first is None:
                return self._grouped(held.contradicting(single | keyed, self.moment, retained), skip)
            # The list is ordered by the entities each names, its subject first: the groups whose
            # subject comes no later than the first ``first`` groups' last are read, and no others.
            # (The values of a free-text attribute rival by their key, read from the values alone:
            # those of a subject that holds two or more are read, and they are few.)
            by_key = self._grouped(held.contradicting(keyed, self.moment, retained)) if keyed else []
            keys = held.contradicting_keys(single, self.moment, retained) + [(g[2], g[3]) for g in by_key]
            ranked = sorted(self._id(subject) for subject, _predicate in keys)
            last = ranked[min(first, len(ranked)) - 1] if ranked else ""
            among = sorted({subject for subject, _predicate in keys if self._id(subject) <= last})
            found = held.contradicting(single | keyed, self.moment, retained, among) if among else []
            return len(keys), self._grouped(found, skip)[:first]
        finally:
            if opened is not None:
                opened.close()

    def _grouped(self, found: list[dict], skip=frozenset()) -> list[tuple]:
        """The rows of each subject's rival values (of a single-valued predicate, or of one key of a
        free-text attribute) of which there are two or more."""
        groups: dict[tuple[str, str, str | None], list[dict]] = {}
        for row in found:
            row["id"] = vocab.id_of(row["fact"])
            if row["id"] not in skip:
                predicate = self.schema.predicate_by_iri(row["predicate"])
                rival = model.attribute_key(str(row["object"])) if predicate and predicate.key == "attribute" else None
                groups.setdefault((row["subject"], row["predicate"], rival), []).append(row)
        out = []
        for (subject, predicate_iri, _rival), rows in groups.items():
            if len(rows) < 2:
                continue
            predicate = self.schema.predicate_by_iri(predicate_iri)
            rows.sort(key=lambda r: (r["recorded"] or 0, r["id"]), reverse=True)
            ids = [r["id"] for r in rows]
            objects = sorted({self._id(r["object"]) for r in rows}) if predicate and predicate.takes_entity else []
            out.append(([self._id(subject)] + objects, ids, subject, predicate_iri, rows))
        return sorted(out, key=lambda group: (group[0], group[1]))

    def contradictions(self, skip=frozenset(), limit: int | None = None, groups=None) -> list[dict]:
        """Two or more current confirmed values of a single-valued predicate (of ``groups``, from
        :meth:`contradicting`, when given); with ``limit``, the first ones only (the names of only
        their entities read)."""
        groups = (self.contradicting(skip) if groups is None else groups)[:limit]
        shown = self._shown
        if limit is not None:
            from pyoxigraph import NamedNode

            names = {}
            for _entities, _ids, subject, _predicate, rows in groups:
                for iri in {subject, *(r["object"] for r in rows if isinstance(r["object"], str))}:
                    if iri not in names and iri.startswith(vocab.KB):
                        # a fact the read's audience may hear names it: it exists for that audience
                        entity = self.session.named_entity(NamedNode(iri))
                        names[iri] = entity.name if entity is not None else iri

            def shown(term):
                return names.get(term, term)

        out = []
        for entities, ids, subject, predicate_iri, rows in groups:
            predicate = self.schema.predicate_by_iri(predicate_iri)
            key = predicate.key if predicate else vocab.id_of(predicate_iri)
            if predicate is not None and predicate.key == "attribute":
                key = str(rows[0]["object"]).partition(":")[0].strip()
            values = ", ".join(
                f"{shown(r['object'])!r} ({fact_id}{', newest' if i == 0 else ''})"
                for i, (r, fact_id) in enumerate(zip(rows, ids, strict=True))
            )
            if predicate is not None and predicate.coexists_on(vocab.id_of(subject).partition("/")[0]):
                # A confirmation closes none of them (§9): the value that is wrong is rejected, the
                # nearest rival of the newest first, then the next, one at a time
                fix, alternatives = ids[1], [ids[0], *ids[2:]]
                verb = "reject"
            else:
                fix, alternatives, verb = ids[0], ids[1:], "confirm"
            out.append(
                _finding(
                    "contradiction",
                    f"{shown(subject)} has {len(rows)} current values of {key}, which takes one: {values}",
                    entities,
                    ids,
                    _command("kg", verb, fix),
                    [_command("kg", verb, other) for other in alternatives],
                )
            )
        return out

    def overlaps(self, skip=frozenset()) -> list[dict]:
        """Two different confirmed values of a single-valued predicate whose valid times overlap,
        one of them closed or not begun yet (two current ones true now are a contradiction, reported
        as such)."""
        groups: dict[tuple[str, str], list[dict]] = {}
        for row in self.session.values("lint-overlaps"):
            if vocab.id_of(row["fact"]) not in skip:
                groups.setdefault((row["subject"], row["predicate"]), []).append(row)
        now = clock.iso(self.moment)
        out = []
        for (subject, predicate_iri), rows in groups.items():
            predicate = self.schema.predicate_by_iri(predicate_iri)
            key = predicate.key if predicate else vocab.id_of(predicate_iri)
            rows.sort(key=lambda r: (r["validFrom"] or "", vocab.id_of(r["fact"])))
            for i, a in enumerate(rows):
                for b in rows[i + 1 :]:
                    if a["validTo"] and (b["validFrom"] or "") >= a["validTo"]:
                        break  # b, and every value after it, begins once a has ended (a history: n, not n²)
                    if _value_key(a["object"]) == _value_key(b["object"]):
                        continue
                    both_now = (
                        not a["retiredAt"]
                        and not b["retiredAt"]
                        and all(
                            (r["validFrom"] or "") <= now and (not r["validTo"] or now < r["validTo"]) for r in (a, b)
                        )
                    )
                    shared = model.shared_time(a["validFrom"], a["validTo"], b["validFrom"], b["validTo"])
                    if shared is None or both_now:
                        continue
                    out.append(self._overlap_finding(subject, key, a, b, shared))
        return sorted(out, key=lambda f: (f["entities"], f["facts"]))

    def _overlap_finding(self, subject: str, key: str, a: dict, b: dict, shared: tuple) -> dict:
        """The fixes: end one value where the other begins (``--valid-to``), or begin one where the
        other ends (``--valid-from``), whichever leave both with some valid time and take from neither
        what the other does not hold. Where one holds all the other's time and more on both sides
        (live from January on, frozen in May), which one fact cannot say, the outer one begins where
        the inner ends, or else ends where the inner begins: first the one that keeps what holds now."""
        ids = {a["fact"]: vocab.id_of(a["fact"]), b["fact"]: vocab.id_of(b["fact"])}

        def held(row):
            state = "closed" if row["retiredAt"] else "current"
            span = _span(row["validFrom"], row["validTo"])
            return f"{self._shown(row['object'])!r} ({ids[row['fact']]}, {state}, valid {span})"

        def ends_by(x, y) -> bool:  # x ends when y does, or before (one without an end never does)
            return not y["validTo"] or (bool(x["validTo"]) and x["validTo"] <= y["validTo"])

        fixes = []
        for x, y in ((a, b), (b, a)):
            if y["validFrom"] and (x["validFrom"] or "") < y["validFrom"] and ends_by(x, y):
                fixes.append(_command("kg", "supersede", ids[x["fact"]], "--valid-to", y["validFrom"]))
        for x, y in ((a, b), (b, a)):
            if x["validTo"] and not ends_by(y, x) and (x["validFrom"] or "") <= (y["validFrom"] or ""):
                fixes.append(_command("kg", "supersede", ids[y["fact"]], "--valid-from", x["validTo"]))
        for outer, inner in ((a, b), (b, a)):
            if not fixes and inner["validFrom"] and inner["validTo"] and not ends_by(outer, inner):
                if (outer["validFrom"] or "") < inner["validFrom"]:
                    later = _command("kg", "supersede", ids[outer["fact"]], "--valid-from", inner["validTo"])
                    earlier = _command("kg", "supersede", ids[outer["fact"]], "--valid-to", inner["validFrom"])
                    # the stretch that holds now first (the later, unless the inner value is to come)
                    fixes += [earlier, later] if clock.iso(self.moment) < inner["validFrom"] else [later, earlier]
        fixes = list(dict.fromkeys(fixes)) or [_command("kg", "history", ids[a["fact"]])]
        message = (
            f"{self._shown(subject)} held two values of {key}, which takes one, at once "
            f"{_span(shared[0], shared[1])}: {held(a)} and {held(b)}"
        )
        return _finding("overlap", message, [self._id(subject)], [ids[a["fact"]], ids[b["fact"]]], fixes[0], fixes[1:])

    def look_alikes(self) -> list[dict]:
        """Names and strong aliases that are not what they look like (see look_alike_labels)."""
        out = []
        for entity, label, why, other in look_alike_labels(self.entities.values()):
            entities = [entity.id] + ([other.id] if other else [])
            alternatives = []
            if other is not None:
                # Written in one script, it would be the other's label: say whether the two are one
                # (or the name is a spoof) or two, which a current alias_of or distinct_from settles.
                # Two of other kinds are never one (alias_of relates names of one kind; a person and
                # an actor, someone of another organization, may be one person).
                if self._linked(entity, other):
                    continue
                if entity.type == other.type or {entity.type, other.type} <= privacy.PERSON_TYPES:
                    fix, alternatives = self._alias_fix(entity, other), [self._distinct_fix(entity, other)]
                else:
                    fix = self._distinct_fix(entity, other)
            elif label == entity.name:
                fix = _command("kg", "add-entity", entity.id, "--name", fold(label, keep_case=True))
            else:
                fix = _command("kg", "identify", label)
            out.append(_finding("look_alike", f"{label!r} ({entity.id}) {why}", entities, [], fix, alternatives))
        return sorted(out, key=lambda f: (f["entities"], f["message"]))

    def orphan_ids(self) -> list[str]:
        if self._orphans is None:
            rows = self.session.values("lint-orphans", entities=self.session.entities_graph, now=self.now)
            self._orphans = sorted(self._id(r["entity"]) for r in rows)
            self._degrees.update({entity_id: 0 for entity_id in self._orphans})
        return self._orphans

    def orphans(self) -> list[dict]:
        out = []
        for entity_id in self.orphan_ids():
            entity = self.by_id.get(entity_id)
            type_key = entity.type if entity else entity_id.partition("/")[0]
            name = entity.name if entity else entity_id
            out.append(
                _finding(
                    "orphan",
                    f"{name} ({entity_id}) takes part in no current fact",
                    [entity_id],
                    [],
                    orphan_fix(entity_id, type_key, self.schema),
                )
            )
        return out

    def _linked(self, a: Named, b: Named) -> bool:
        """Whether a current distinct_from or alias_of joins the two (asked once, when a pair needs it)."""
        if self._links is None:
            self._links = {
                frozenset((_entity_id(r["subject"]), _entity_id(r["object"])))
                for r in self.session.values("lint-links", now=self.now)
            }
        return frozenset((a.id, b.id)) in self._links

    def _alias_fix(self, a: Named, b: Named) -> str:
        """``kg propose`` saying the one with fewer facts (on a tie, the later id) is another name
        for the other."""
        alias, kept = sorted((a, b), key=lambda e: (self.degree(e.id), e.id == min(a.id, b.id)))
        return _command("kg", "propose", alias.id, "alias_of", "--object", kept.id, "--source", LINT_SOURCE)

    def _distinct_fix(self, a: Named, b: Named) -> str:
        return _command("kg", "propose", a.id, "distinct_from", "--object", b.id, "--source", LINT_SOURCE)

    def alias_collisions(self) -> list[dict]:
        out = []
        people = [e for e in self.entities.values() if e.type in PERSON_TYPES]
        for a, b, why in alias_collisions(people):
            if self._linked(a, b):
                continue
            self.colliding.add(frozenset((a.id, b.id)))
            out.append(
                _finding(
                    "alias_collision",
                    f"{a.name} ({a.id}) and {b.name} ({b.id}): {why}",
                    [a.id, b.id],
                    [],
                    self._distinct_fix(a, b),
                    [self._alias_fix(a, b)],
                )
            )
        return out

    def merge_suggestions(self) -> list[dict]:
        """After :meth:`alias_collisions`: a pair of people it names is not suggested again."""
        out = []
        for a, b, why in merge_suggestions(self.entities.values()):
            if self._linked(a, b) or frozenset((a.id, b.id)) in self.colliding:
                continue
            facts = f"{self.degree(a.id)} and {self.degree(b.id)} current facts"
            out.append(
                _finding(
                    "merge_suggestion",
                    f"{a.name!r} ({a.id}) and {b.name!r} ({b.id}): {why} ({facts})",
                    [a.id, b.id],
                    [],
                    self._alias_fix(a, b),
                    [self._distinct_fix(a, b)],
                )
            )
        return out

    def lost(self, skip: set[str] = frozenset()) -> list[dict]:
        """Values a correction closed that was rejected since, which nothing current says again: the
        rejection does not reopen them (a closed fact stays closed), so the subject may hold nothing.
        Those in ``skip`` (past retention: kg expire deletes them) are not found."""
        out = []
        for row in self.session.values("lint-lost", now=self.now):
            predicate = self.schema.predicate_by_iri(row["predicate"])
            if predicate is None or vocab.id_of(row["fact"]) in skip:
                continue
            fact_id, by = vocab.id_of(row["fact"]), vocab.id_of(row["by"])
            target = self._id(row["object"]) if predicate.takes_entity else row["object"]
            sentence = predicate.reads(self._shown(row["subject"]), self._shown(row["object"]))
            ids = [self._id(row["subject"])] + ([target] if predicate.takes_entity else [])
            said = ["--object" if predicate.takes_entity else "--value", target]
            fix = _command("kg", "propose", ids[0], predicate.key, *said, "--source", LINT_SOURCE)
            message = f"{fact_id}: {sentence}; closed by {by}, rejected since, and nothing current says it again"
            out.append(_finding("lost", message, ids, [fact_id], fix))
        return sorted(out, key=lambda f: (f["entities"], f["facts"]))

    def retention(self, before: datetime, days: int) -> list[dict]:
        ends = {
            vocab.id_of(row["fact"]): [self._id(row[end]) for end in ("subject", "object") if row[end]]
            for row in self.session.values("lint-retention", before=vocab.datetime_literal(clock.iso(before)))
        }
        return [
            _finding(
                "retention",
                f"{fact_id} names a person and was not observed or confirmed again for {days} days",
                ids,
                [fact_id],
                "kg expire",
            )
            for fact_id, ids in sorted(ends.items())
        ]


# --- the pure core ----------------------------------------------------------------------------------


def _span(start, end) -> str:
    """A valid time in words: "from 2026-01-01 to 2026-06-01", "from the beginning on"."""
    return f"from {clock.shown(start) if start else 'the beginning'}" + (f" to {clock.shown(end)}" if end else " on")


def _value_key(term: str) -> str:
    return model.normalize(str(term))


# Letters drawn like Latin ones, after Unicode compatibility folding and case folding: Cyrillic,
# Greek, Armenian and a few Latin variants (after Unicode's confusables, the letters whose capital
# or small form is the Latin letter's look).
_CONFUSABLE = str.maketrans(
    {
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "ë",
        "к": "k",
        "м": "m",
        "н": "h",
        "о": "o",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "ѕ": "s",
        "і": "i",
        "ї": "ï",
        "ј": "j",
        "һ": "h",
        "ԁ": "d",
        "ԛ": "q",
        "ԝ": "w",
        "ӏ": "l",
        "ү": "y",
        "α": "a",
        "β": "b",
        "ε": "e",
        "ζ": "z",
        "η": "h",
        "ι": "i",
        "κ": "k",
        "μ": "m",
        "ν": "n",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "y",
        "χ": "x",
        "ϲ": "c",
        "ϳ": "j",
        "օ": "o",
        "ս": "u",
        "հ": "h",
        "ո": "n",
        "ı": "i",
        "ɑ": "a",
        "ɡ": "g",
        "ʏ": "y",
        "ɪ": "i",
    }
)
_LOOK_ALIKE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK", "ARMENIAN")
_WORD = re.compile(r"[^\W\d_]+")


def fold(text: str, keep_case: bool = False) -> str:
    """A label with its look-alike letters folded to the Latin ones they are drawn like (compatibility
    forms first: fullwidth and mathematical letters become plain). ``keep_case``: a capital stays one."""
    import unicodedata

    folded = unicodedata.normalize("NFKC", text)
    if keep_case:
        return "".join(
            ch.translate(_CONFUSABLE) if ch == ch.lower() else ch.lower().translate(_CONFUSABLE).upper()
            for ch in folded
        )
    return model.match_key(folded.casefold().translate(_CONFUSABLE))


def _script(char: str) -> str | None:
    import unicodedata

    script = unicodedata.name(char, "").split(" ")[0]
    return script if script in _LOOK_ALIKE_SCRIPTS else None


def mixed_scripts(label: str) -> str | None:
    """Why a label's word mixes look-alike scripts, naming the letters of the fewer, or None."""
    import unicodedata

    for word in _WORD.findall(label):
        scripts: dict[str, list[str]] = {}
        for char in word:
            script = _script(char)
            if script:
                scripts.setdefault(script, []).append(char)
        if len(scripts) > 1:
            main = max(scripts, key=lambda s: len(scripts[s]))
            odd = [(s, c) for s, chars in scripts.items() if s != main for c in dict.fromkeys(chars)]
            shown = ", ".join(f"{c!r} (U+{ord(c):04X} {unicodedata.name(c, '?')})" for _, c in odd[:3])
            return f"mixes {main.title()} and {odd[0][0].title()} letters in the word {word!r}: {shown}"
    return None


def look_alike_labels(entities) -> list[tuple]:
    """(entity, label, why, other entity or None) for each name or strong alias that mixes
    look-alike scripts in a word, or that folds (:func:`fold`) into another entity's label as
    written while differing from it. Each label is filed under its folded key once, so the cost
    follows the number of labels."""
    found = []
    by_key: dict[str, list] = {}  # the match key of a label as written -> (entity, label)
    folded: list[tuple] = []
    for entity in entities:
        for label in dict.fromkeys([entity.name, *entity.aliases]):
            by_key.setdefault(model.match_key(label), []).append((entity, label))
            why = mixed_scripts(label)
            if why:
                found.append((entity, label, why, None))
            key = fold(label)
            if key != model.match_key(label):
                folded.append((entity, label, key))
    for entity, label, key in folded:
        for other, other_label in by_key.get(key, ()):
            if other.id != entity.id:
                found.append(
                    (
                        entity,
                        label,
                        f"looks like {other_label!r}, a label of {other.id}: they differ only in look-alike letters",
                        other,
                    )
                )
                break
    return found


_NOT_LETTERS = re.compile(r"[\W_]+")


def squash(text: str) -> str:
    """A name without case, spaces, hyphens or punctuation: "Web App", "web-app" -> "webapp"."""
    return _NOT_LETTERS.sub("", text.casefold())


def one_letter_apart(a: str, b: str) -> bool:
    """Whether one edit (a letter changed, added or dropped) turns ``a`` into ``b``, and the edit
    is not a digit: "staging-2" and "staging-3" are numbered siblings, not a typo."""
    if len(a) > len(b):
        a, b = b, a
    if a == b or len(b) - len(a) > 1:
        return False
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1 :] == b[i + 1 :] and not (a[i].isdigit() or b[i].isdigit())
    return a[i:] == b[i + 1 :] and not b[i].isdigit()


def near_identical(a: str, b: str) -> str | None:
    """Why two names look like one, or None: equal but for case, spaces and punctuation, or (both
    at least MIN_FUZZY_LENGTH letters) one letter apart."""
    return _near(squash(a), squash(b))


def _near(ka: str, kb: str) -> str | None:
    if not ka or not kb:
        return None
    if ka == kb:
        return "the same name but for case, spaces and punctuation"
    if min(len(ka), len(kb)) >= MIN_FUZZY_LENGTH and one_letter_apart(ka, kb):
        return "names one letter apart"
    return None


def _variants(key: str) -> set[str]:
    """The key with one letter dropped, at each place that is not a digit: two keys one letter apart
    share a variant, or one is a variant of the other."""
    return {key[:i] + key[i + 1 :] for i, ch in enumerate(key) if not ch.isdigit()}


def merge_suggestions(entities) -> list[tuple[Named, Named, str]]:
    """Pairs of entities of one type that may be one: near-identical names, or a name that is the
    other's strong alias (ignoring case, spaces and punctuation). Sorted by ids, ``a.id < b.id``.

    Each name is filed under itself and under each of its one-letter-shorter variants: two names
    one letter apart meet in one of these drawers, so the cost follows the number of entities, not
    its square.
    """
    by_type: dict[str, dict[str, list[Named]]] = {}
    for entity in entities:
        key = squash(entity.name)
        if key:
            by_type.setdefault(entity.type, {}).setdefault(key, []).append(entity)
    found: dict[tuple[str, str], tuple[Named, Named, str]] = {}

    def add(a: Named, b: Named, why: str) -> None:
        if a.id != b.id:
            a, b = sorted((a, b), key=lambda e: e.id)
            found.setdefault((a.id, b.id), (a, b, why))

    for by_key in by_type.values():
        drawers: dict[str, list[str]] = {}
        for key, group in by_key.items():
            for i, a in enumerate(group):
                for b in group[i + 1 :]:
                    add(a, b, _near(key, key))
                for alias in a.aliases:
                    for b in by_key.get(squash(alias), ()):
                        add(b, a, f"the name of one is an alias of the other ({alias!r})")
            if len(key) >= MIN_FUZZY_LENGTH:
                for drawer in _variants(key) | {key}:
                    drawers.setdefault(drawer, []).append(key)
        for keys in drawers.values():
            if len(keys) < 2:
                continue
            for i, ka in enumerate(keys):
                for kb in keys[i + 1 :]:
                    why = _near(ka, kb)
                    if why:
                        for a in by_key[ka]:
                            for b in by_key[kb]:
                                add(a, b, why)
    return [found[pair] for pair in sorted(found)]


def alias_collisions(people) -> list[tuple[Named, Named, str]]:
    """Pairs of people a name could mean either of: a shared name or strong alias, or one's alias
    being the other's first name ("Dana" for "Dana Okafor" and for "Dana Lee" alias "Dana").
    Names compare by :func:`kgrdf.model.match_key`. Sorted by ids, ``a.id < b.id``."""
    labels: dict[str, list[Named]] = {}
    first_names: dict[str, list[Named]] = {}
    spelled: dict[str, str] = {}  # a match key as someone wrote it
    for person in people:
        for text in [person.name, *person.aliases]:
            key = model.match_key(text)
            if key and person not in labels.setdefault(key, []):
                labels[key].append(person)
                spelled.setdefault(key, model.clean_label(text))
        words = model.match_key(person.name).split(" ")
        if len(words) > 1:
            first_names.setdefault(words[0], []).append(person)
    found: dict[tuple[str, str], tuple[Named, Named, str]] = {}

    def add(a: Named, b: Named, why: str) -> None:
        if a.id != b.id:
            a, b = sorted((a, b), key=lambda e: e.id)
            found.setdefault((a.id, b.id), (a, b, why))

    for label, group in sorted(labels.items()):
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                add(a, b, f"both are called {spelled[label]!r}")
        for b in first_names.get(label, []):
            for a in group:
                add(a, b, f"{spelled[label]!r} names {a.name} and is the first name of {b.name}")
    return [found[pair] for pair in sorted(found)]


def orphan_fix(entity_id: str, type_key: str, schema) -> str:
    """A ``kg propose`` template that ties an entity of ``type_key`` into the graph, from the
    schema's domains and ranges: a predicate that places it under a parent first (a step in a
    process, a feature part of a product), then one that gives it children, then one of its own
    axis; one whose other end the schema names, many-valued and low-risk before the others. The
    other end is a placeholder in capitals (a type of the predicate's axis, else the first type it
    allows), the source ``KIND:REF``."""

    def axis(key):
        return schema.types[key].axis if key in schema.types else None

    choices = []
    for predicate in schema.predicates.values():
        if not predicate.takes_entity or (type_key in PERSON_TYPES and not predicate.person_ok):
            continue
        for direction, own, other in (
            ("out", predicate.domain, predicate.range),
            ("in", predicate.range, predicate.domain),
        ):
            if type_key not in own:
                continue
            places_under = (predicate.grouping, direction) in (("anchor", "out"), ("container", "in"))
            holds = (predicate.grouping, direction) in (("anchor", "in"), ("container", "out"))
            rank = 0 if places_under else 1 if holds else 2 if predicate.axis == axis(type_key) else 3
            order = (rank, not other, predicate.single_valued, predicate.high_risk, direction != "out", predicate.key)
            choices.append((order, predicate, direction, other))
    if choices:
        _, predicate, direction, other = min(choices, key=lambda c: c[0])
        placeholder = min(other, key=lambda t: (axis(t) != predicate.axis, t)).upper() if other else "ENTITY"
        if direction == "out":
            return _command("kg", "propose", entity_id, predicate.key, "--object", placeholder, "--source", "KIND:REF")
        return _command("kg", "propose", placeholder, predicate.key, "--object", entity_id, "--source", "KIND:REF")
    values = sorted(
        (p.axis != axis(type_key), p.key)
        for p in schema.predicates.values()
        if not p.takes_entity and type_key in p.domain and (type_key not in PERSON_TYPES or p.person_ok)
    )
    if values:
        return _command("kg", "propose", entity_id, values[0][1], "--value", "VALUE", "--source", "KIND:REF")
    return _command("kg", "propose", entity_id, "PREDICATE", "--object", "ENTITY", "--source", "KIND:REF")


# --- for a person -----------------------------------------------------------------------------------

_HEADINGS = {
    "stale": "stale: confirmed facts not observed or confirmed again for {stale_days} days",
    "contradiction": "contradictions: more than one current value of a single-valued predicate or an attribute's key",
    "orphan": "orphans: entities in no current fact",
    "alias_collision": "alias collisions: people a name could mean either of",
    "merge_suggestion": "merge suggestions: near-identical names of one type",
    "overlap": "overlaps: two values of a single-valued predicate true at once, in the past or to come",
    "look_alike": "look-alikes: names that are not what they look like",
    "retention": "retention: facts naming a person not observed or confirmed again for {retention_days} days",
    "lost": "lost values: closed by a correction rejected since, said by nothing current",
}


_PLURALS = {"stale": "stale", "retention": "past retention", "look_alike": "look-alikes"}


def _counted(kind: str, number: int) -> str:
    """ "1 orphan", "3 orphans", "2 stale": a kind of finding counted, as the summary line says it."""
    from kgrdf.render import counted

    one = {"retention": "past retention", "look_alike": "look-alike", "lost": "lost value"}.get(
        kind, kind.replace("_", " ")
    )
    return counted(number, one, _PLURALS.get(kind))


def text(result: dict) -> str:
    """The findings grouped by kind, each with its fix, and a summary line. Retention findings show
    fact ids only, on one line."""
    lines = []
    for kind in KINDS:
        found = [f for f in result["findings"] if f["kind"] == kind]
        if not found:
            continue
        lines.append(f"{_HEADINGS[kind].format(**result['settings'])} ({len(found)})")
        if kind == "retention":
            ids = [f["facts"][0] for f in found]
            shown = " ".join(ids[:SHOWN_PER_KIND])
            more = f" and {len(ids) - SHOWN_PER_KIND} more" if len(ids) > SHOWN_PER_KIND else ""
            lines += [f"  {shown}{more}", f"    fix: {found[0]['fix']}  # deletes them"]  # (a line to paste as it is)
            continue
        for finding in found[:SHOWN_PER_KIND]:
            lines.append(f"  {finding['message']}")
            lines.append(f"    fix: {finding['fix']}")
            lines += [f"     or: {alternative}" for alternative in finding["alternatives"]]
        if len(found) > SHOWN_PER_KIND:
            lines.append(f"  ... and {len(found) - SHOWN_PER_KIND} more (kg lint --json lists every one)")
    total = len(result["findings"])
    if not total:
        lines.append(
            "no findings: nothing stale, contradictory, overlapping, orphaned, colliding, duplicated, "
            "look-alike, past retention or lost"
        )
    else:
        parts = ", ".join(_counted(kind, n) for kind, n in result["counts"].items() if n)
        lines.append(f"{total} finding{'s' if total != 1 else ''}: {parts}")
    return "\n".join(lines)
