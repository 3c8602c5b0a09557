"""Replicas that share: ``kg remote`` and ``kg sync`` (§9b).

A team's hub is a SPARQL 1.1 server (kgrdf.store.hub). ``kg sync`` pushes the patches of this
replica's shared journal that the hub does not hold yet, pulls the other replicas' patches it has
not seen, each kept as a journal of its own in ``replicas/<replica>/`` (each patch byte for byte,
gzipped as ours are, and checked to follow the one before it), and folds what they say into the
knowledge base in one write of its own, through the same write path as any command: the same
resolution, the same privacy routing (a text naming one of this machine's people goes to the
private journal) and the same SHACL shapes.
The private journal is never pushed.

The fold is about facts, not rows: each replica mints its own fact ids, so a fact another replica
holds is found here by what it says (subject, predicate, object or value):

- a fact not held here is proposed with the other replica's sources, valid time and audiences;
- a fact held here that the other replica heard from sources this one lacks is observed again
  with those sources (one fact, observed on both, with both sources); one it brings nothing new to
  is left alone, so that syncing again, or a fact coming back from a replica that took it from
  here, changes nothing;
- confirmed there, it is confirmed here (without closing another confirmed value of a
  single-valued predicate: both stay current, and ``kg lint`` reports them for a person to decide);
- rejected there, it is rejected here (closed here meanwhile too: the value was never right, so it
  was not the one its replacement followed), and a rejected fact stays rejected whatever comes later:
  a rejection on one replica holds on all; the sources another replica heard it in meanwhile are
  still added to it, as to a fact closed here (Writer.observe_settled), its status unchanged;
- closed there, replaced by another fact (a person confirmed a rival value, or superseded it), it
  is closed here, replaced by the fact here that says what its replacement says, once everything
  else is folded; a fact closed here stays closed, as a rejected one stays rejected, but for one
  case: two people who each closed the other's value (each confirmed a rival) chose twice, and the
  later choice holds on every replica (the value it chose holds again where the earlier closed it);
- an organization merged there into another is merged here when both are here, before the kept
  one takes the names the merge gave it there;
- an entity's name or summary, and a current fact's valid time (a retime: kg supersede F
  --valid-from, or a value ended where a replacement that begins later begins), that differ there
  take the latest a person gave them on any replica, by the time of the change, then replica and
  patch (_Originals): a sync's own patch is no such change, so that none is handed back as newer.

These rules only ever add sources and move a status up (proposed, confirmed, then closed or
rejected), or take the latest of changes every replica reads alike, so replicas that have seen the
same patches hold the same current facts, names and valid times whatever order they synced in. The
patches a sync pulls are folded in one deterministic order: by time, replica and number.

Each perspective this knowledge base holds is folded, each in a write of its own (the knowledge
base's own first). A fact or entity that is refused (by a shape, by resolution, as of a perspective
this knowledge base does not hold) is set aside:
its patch stays in ``replicas/``, the refusal is recorded in ``sync.json`` and shown by ``kg sync``
and ``kg status``; nothing is dropped silently. Each sync tries it again, and once its cause is gone
it is folded and leaves the list. A fact the other replica let expire is not folded.
"""

import hashlib
import itertools
import re

from pyoxigraph import NamedNode

from kgrdf import clock, files, lock, made, model, nquads, pasted, privacy, vocab
from kgrdf.errors import BadInput, Damaged, KgError, NotFound, Refused
from kgrdf.journal import Position, Stream, fold, name_of, number_of, parse_patch

_CHOSEN = re.compile(
    r"as on (?P<on>r-[0-9a-f]{8}), chosen there at (?P<at>[0-9T:.+-]+Z?)(?: on (?P<by>r-[0-9a-f]{8}))?"
)
NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}\Z")  # (\Z, not $: $ lets a final newline through)
REPLICA = vocab.REPLICA_PATTERN  # a replica's id, as kg init mints it: also the name of its folder here
REPLICAS = files.REPLICAS  # the other replicas' journals, as pulled from the hubs
DISCLOSED_ROW = str(model.DISCLOSED)  # a row of a disclosure (kgrdf.disclosure), as a patch holds it
STATE = "sync.json"  # each remote's last sync, how far each replica's journal is folded, what was set aside
PUSH_AT_ONCE = 1000  # patches read from the journal and pushed at a time
COPIED = (
    "another knowledge base has this one's replica id (a copied folder); give the copy a new journal "
    "(mv journal journal.aside there: its next write starts one, as a new replica)"
)


# --- remotes ---------------------------------------------------------------------------------------


def remotes(kb) -> dict[str, str]:
    """Each remote's name and hub URL, as ``format.json`` keeps them."""
    return dict(files.read_json(kb.path / "format.json").get("remotes", {}))


def add_remote(kb, name: str, url: str) -> dict:
    """Record the hub at ``url`` as the remote ``name``. Raises BadInput for a bad name or URL (one
    that carries a user or password included: format.json is kept in git), Refused when the name is
    taken."""
    from kgrdf.store.sparql import endpoints

    if not NAME.match(name):
        raise BadInput(f"remote name {name!r} must be lower-case letters, digits, - or _, starting with a letter")
    endpoints(url, what="a remote's URL")
    with lock.held(kb.path / "lock", exclusive=True):
        settings = files.read_json(kb.path / "format.json")
        known = settings.get("remotes", {})
        if name in known:
            raise Refused(
                f"the remote {name} is there already ({known[name]})",
                hint=f"{pasted.kg('remote', 'remove', name)} first",
            )
        with kb.committing(f"kg remote add {name}"):
            files.write_json(kb.path / "format.json", {**settings, "remotes": {**known, name: url}})
    made.note(f"the remote {name} was added")
    return {"remote": name, "url": url}


def remove_remote(kb, name: str) -> dict:
    """Forget the remote ``name`` (what was pulled from it stays). Raises NotFound."""
    with lock.held(kb.path / "lock", exclusive=True):
        settings = files.read_json(kb.path / "format.json")
        known = dict(settings.get("remotes", {}))
        if name not in known:
            raise _no_remote(name, known)
        url = known.pop(name)
        state = _state(kb)
        state["remotes"].pop(name, None)
        with kb.committing(f"kg remote remove {name}"):
            files.write_json(kb.path / "format.json", {**settings, "remotes": known})
            files.write_json(kb.path / STATE, state)
    made.note(f"the remote {name} was removed")
    return {"remote": name, "url": url}


def _no_remote(name: str, known: dict) -> NotFound:
    listed = ", ".join(sorted(known)) or "none"
    return NotFound(f"no remote is called {name!r} (remotes: {listed})", hint="kg remote add NAME URL adds one")


def _state(kb) -> dict:
    state = files.read_json(kb.path / STATE)
    return {
        "remotes": dict(state.get("remotes", {})),
        "folded": dict(state.get("folded", {})),
        "set_aside": list(state.get("set_aside", [])),
        "held_back": list(state.get("held_back", [])),
    }


REASON_FORGOTTEN = "its reason named a person since forgotten here"


def forget_in_state(kb, names) -> None:
    """Of what sync.json says was set aside, each reason that ``names`` (a text -> whether it names
    the person kg forget is forgetting) says only that: the item is tried again at the next sync,
    as any is, without the name. (Its id stays, as an id in the journals does.)"""
    path = kb.path / STATE
    if not path.exists():
        return
    state = files.read_json(path)
    items = state.get("set_aside") if isinstance(state, dict) else None
    if not isinstance(items, list):
        return
    changed = False
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("reason"), str) and names(item["reason"]):
            item["reason"] = REASON_FORGOTTEN
            changed = True
    if changed:
        files.write_json(path, state)


def status(kb) -> dict:
    """Each remote with its URL and last sync, what was set aside, and each replica held back at the
    last sync (for kg status and kg remote list)."""
    state = _state(kb)
    return {
        "remotes": [
            {"name": name, "url": url, **state["remotes"].get(name, {"synced_at": None})}
            for name, url in sorted(remotes(kb).items())
        ],
        "replicas": state["folded"],
        "set_aside": state["set_aside"],
        "held_back": state["held_back"],
    }


# --- kg sync ---------------------------------------------------------------------------------------


def sync(kb, name: str | None = None) -> dict:
    """Push this replica's shared journal to each remote's hub (or the one named), pull the other
    replicas' patches, and fold them into the knowledge base in one write. Raises NotFound for an
    unknown remote, Refused when there is none. A hub that does not answer (or answers with an
    error) is passed over and the others are synced: then, once what they brought is written,
    Refused (exit 1) names each remote passed over, why, and the way out, and carries the report
    (its ``remotes`` say what happened with each); when no remote answered, nothing is written.
    What was pulled from a hub before it stopped answering is kept, and folded by the next sync."""
    from kgrdf.store.hub import Hub, HubError

    known = remotes(kb)
    if name is not None and name not in known:
        raise _no_remote(name, known)
    if not known:
        raise Refused("this knowledge base has no remote to sync with", hint="kg remote add NAME URL adds a hub")
    chosen = {name: known[name]} if name is not None else known
    report = {"remotes": [], "folded": {}, "set_aside": [], "held_back": [], "unmatched_forgets": 0}
    failed = []
    with kb.writing("sync") as writer:
        originals = _Originals(kb, privacy.forgotten_facts(kb))  # (read under the lock a forget takes)
        for remote, url in sorted(chosen.items()):
            hub = Hub(url)
            try:
                pushed = _push(kb, hub)
                pulled = _pull(kb, hub, report["held_back"])
            except HubError as exc:  # that hub alone: the others are synced
                failed.append({"name": remote, "url": url, "error": exc.message, "hint": exc.hint})
                report["remotes"].append(failed[-1])
                continue
            finally:
                hub.close()
            report["remotes"].append({"name": remote, "url": url, "pushed": pushed, "pulled": pulled})
        if len(failed) == len(chosen):
            raise _passed_over(failed, report, synced=[])
        folding = _Fold(kb, writer, originals=originals)
        report["folded"], report["set_aside"], marks = folding.run()
        if report["folded"].get("created"):  # (said when a fact comes here new: one of those may be it)
            report["unmatched_forgets"] = privacy.unmatched_forgets(kb)
        report["transaction"] = writer.seq if writer.has_change else None
    for other in sorted(folding.others):  # each other perspective this knowledge base holds: a write of its own
        held = type(kb)(kb.path, kb.backend_kind, other)
        with held.writing("sync") as writer:
            counts, aside, _marks = _Fold(held, writer, first=False, originals=originals).run()
            # (a sync that folded into another perspective alone wrote too, and says so)
            if report["transaction"] is None and writer.has_change:
                report["transaction"] = writer.seq
        report["set_aside"] += aside
        for name, count in counts.items():
            report["folded"][name] = report["folded"].get(name, 0) + count
    synced = [done for done in report["remotes"] if "error" not in done]
    state = _state(kb)
    now = clock.iso(clock.now())
    for done in synced:
        state["remotes"][done["name"]] = {"synced_at": now, "pushed": done["pushed"], "pulled": done["pulled"]}
    state["folded"].update(marks)
    # What was tried again and folded leaves the list; what was set aside again is in this report.
    kept = [item for item in state["set_aside"] if (item["replica"], item["patch"], item["id"]) not in folding.retried]
    state["set_aside"] = kept + report["set_aside"]
    # A replica held back stays so until a sync pulls it whole; one whose hub was passed over is kept.
    now_held = {item["replica"] for item in report["held_back"]}
    state["held_back"] = report["held_back"] + (
        [item for item in state["held_back"] if item["replica"] not in now_held] if failed else []
    )
    with lock.held(kb.path / "lock", exclusive=True):
        with kb.committing(f"kg sync: {', '.join(done['name'] for done in synced)}"):
            files.write_json(kb.path / STATE, state)
    if failed:
        raise _passed_over(failed, report, synced=[done["name"] for done in synced])
    return report


def _passed_over(failed: list[dict], report: dict, synced: list[str]) -> Refused:
    """The refusal of a sync that passed over the remotes in ``failed`` (each one that did not answer,
    why, and the way out), carrying the report."""
    said = "; ".join(
        f"remote {f['name']}: {f['error']}" + (f" ({f['hint']})" if f["hint"] and len(failed) > 1 else "")
        for f in failed
    )
    if synced and report.get("transaction") is not None:
        said += f"; synced {', '.join(synced)} and wrote what {'it' if len(synced) == 1 else 'they'} brought"
    elif synced:
        said += f"; synced {', '.join(synced)}, which brought nothing new"
    else:
        said += "; nothing was written"
    hint = failed[0]["hint"] if len(failed) == 1 else None
    return Refused(said, hint=hint, **report)


def _push(kb, hub) -> int:
    """Push the patches of this replica's shared journal the hub does not hold; the number pushed.
    Only whole patches, up to where view.json says the journal ends. Raises Refused when the hub's
    patches of this replica are not this journal's: another knowledge base pushed as this replica
    (a copied folder), and this one's next patches would not follow the hub's."""
    on_hub = hub.heads().get(kb.replica, 0)
    last = number_of(kb.view().shared)
    if on_hub > last:
        raise Refused(
            f"the hub at {hub.url} holds {on_hub} patches of replica {kb.replica}, and this knowledge base {last}",
            hint=COPIED,
        )
    stream = kb.journal.shared
    if on_hub:  # (each patch names the one before it: the last alike, all before it are alike)
        path = stream.path_of(on_hub)
        patch, data, _size = stream.read(path) if path is not None else (None, b"", 0)
        if patch is None:
            raise Damaged(f"journal/{kb.replica}/{name_of(on_hub)} is not a whole patch")
        if hashlib.sha256(data).hexdigest() not in hub.digests(kb.replica, on_hub):
            raise Refused(
                f"the hub at {hub.url} holds another patch {on_hub} of replica {kb.replica} than this knowledge base",
                hint=COPIED,
            )
    restored = []  # patches of ours another replica found altered on the hub: put back as we hold them
    for number in hub.altered(kb.replica):
        path = stream.path_of(number) if number <= last else None
        patch, data, _size = stream.read(path) if path is not None else (None, b"", 0)
        if patch is not None:
            restored.append((number, data, patch.time))
    hub.restore(kb.replica, restored)
    for start in range(on_hub + 1, last + 1, PUSH_AT_ONCE):
        patches = []
        for number in range(start, min(start + PUSH_AT_ONCE, last + 1)):
            path = stream.path_of(number)
            patch, data, _size = stream.read(path) if path is not None else (None, b"", 0)
            if patch is None:
                raise Damaged(f"journal/{kb.replica}/{name_of(number)} is not a whole patch")
            patches.append((number, data, patch.deletes, patch.adds, patch.time))
        hub.push(kb.replica, patches)
    return last - on_hub


def _pull(kb, hub, held_back: list) -> int:
    """Pull the other replicas' patches this knowledge base lacks into ``replicas/<replica>/``; the
    number pulled. Each must follow the one before it (its number, its ``prev``). A replica with a
    patch altered on the hub, or one that does not follow, is held back from there on (the patches
    before it are kept), named in ``held_back``, and the others are pulled."""
    count = 0
    for replica, last in sorted(hub.heads().items()):
        if replica == kb.replica or not REPLICA.match(replica):
            continue
        stream = Stream(kb.path / REPLICAS / replica)
        end = stream.last()
        held = stream.read(end)[0] if end else None
        if end is not None and held is None:
            end.unlink()  # a copy cut short (its TC never written): the hub still holds the patch
            end = stream.last()
            held = stream.read(end)[0] if end else None
        have = number_of(f"{end.parent.name}/{end.name}") if end else 0
        if last <= have:
            continue
        prev = held.id if held else None
        try:
            pulled = hub.pull(replica, have)
        except Damaged as exc:  # one replica's altered patch holds back that replica alone
            held_back.append({"replica": replica, "reason": exc.message + (f" ({exc.hint})" if exc.hint else "")})
            continue
        for number, data in pulled:
            where = f"the hub's patch {number} of replica {replica}"
            patch = parse_patch(data, where)
            if patch is None or number != have + 1 or patch.prev != prev or patch.seq is not None:
                # (two knowledge bases that pushed as one replica, a copied folder, break its journal)
                said = f"{where} does not follow patch {have} of that journal (tell the hub's keeper)"
                held_back.append({"replica": replica, "reason": said})
                break
            stream.write_bytes(number, data)
            have, prev, count = number, patch.id, count + 1
    return count


class _Fold:
    """The fold of the other replicas' journals into one write (see the module's notes)."""

    def __init__(self, kb, writer, first: bool = True, originals: "_Originals | None" = None):
        self.kb = kb
        self.writer = writer
        self.perspective = writer.perspective
        # The first fold (the knowledge base's perspective) sets aside what is of a perspective it
        # does not hold, and names the others it holds (``others``), each folded after it by a fold
        # of its own, which passes over all but its own perspective.
        self.first = first
        self.held: set[str] | None = None
        self.others: set[str] = set()
        self.set_aside: list[dict] = []
        self.retried: set[tuple] = set()  # (replica, patch, id) of what an earlier sync set aside, tried again
        self.origin: dict[str, tuple[str, int]] = {}  # a fact this fold made or observed -> the patch it came from
        self.told: set[tuple[str, str]] = set()  # (replica, fact) whose patches record a disclosure of it
        self.counts = {
            "created": 0,
            "observed": 0,
            "confirmed": 0,
            "rejected": 0,
            "closed": 0,
            "entities": 0,
            "merged": 0,
            "retimed": 0,
            "told": 0,  # disclosures
        }
        self.counted: dict[str, list[str]] = {}  # a fact this fold made or changed -> what it counted of it
        self.closures: list[tuple] = []  # facts another replica closed: closed here once all the rest is folded
        self.chosen: dict[str, tuple[str, str]] = {}  # a fact this fold closed: the choice it followed (_choice)
        # what kg forget deleted here (keyed digests), read once a sync
        self.deleted = originals.deleted if originals is not None else privacy.forgotten_facts(kb)
        self.originals = originals if originals is not None else _Originals(kb, self.deleted)

    def run(self) -> tuple[dict, list, dict]:
        """Fold every patch past the marks of ``sync.json``, and again what an earlier sync set aside
        (its cause may be gone: a perspective held since, a shape or schema changed); the counts, what
        was set aside, and the new marks. The marks move past what is set aside, so it is tried again
        here, item by item, rather than by folding its patch again."""
        state = _state(self.kb)
        folded = state["folded"]
        waiting: dict[str, dict[int, set]] = {}  # replica -> patch number -> the ids set aside from it
        for item in state["set_aside"]:
            waiting.setdefault(item["replica"], {}).setdefault(item["patch"], set()).add(item["id"])
        marks, items, views = {}, {}, {}
        base = self.kb.path / REPLICAS
        for folder in sorted(base.iterdir()) if base.is_dir() else []:
            if not REPLICA.match(folder.name):
                continue
            replica = folder.name
            try:
                entries = list(Stream(folder).entries_after(None, 0, None, []))
            except Damaged as exc:
                raise Damaged(
                    exc.message,
                    hint=f"remove {REPLICAS}/{replica}/ (this knowledge base's copy of that replica's journal): "
                    "the next kg sync pulls it again from the hub",
                ) from None
            done, again = folded.get(replica, 0), waiting.get(replica, {})
            if len(entries) <= done and not again:
                continue
            views[replica] = entries
            if len(entries) > done:
                marks[replica] = len(entries)
            for at, entry in enumerate(entries):
                number = number_of(entry.name)
                if at < done and number not in again:
                    continue
                for line in itertools.chain(entry.patch.deletes, entry.patch.adds):
                    graph = privacy.graph_of(line)
                    if privacy.is_entities_graph(graph):
                        key = (0, line[1 : line.index(">")])
                    else:
                        key = (1, privacy.fact_of(graph))
                    if at < done:  # a patch folded before: only what was set aside from it
                        if vocab.id_of(key[1]) not in again[number]:
                            continue
                        self.retried.add((replica, number, vocab.id_of(key[1])))
                    items.setdefault((replica, key), (key[0], entry.patch.time, replica, number, key[1]))
                    if DISCLOSED_ROW in line:
                        self.told.add((replica, key[1]))
        sessions = {replica: self._session(entries) for replica, entries in views.items()}
        self.writer.expect_aliases(  # looked up in the index a block at a time, not a query an alias
            alias
            for kind, _time, replica, _number, iri in items.values()
            if kind == 0
            for theirs in [sessions[replica].entity(NamedNode(iri))]
            if theirs is not None
            for alias in theirs.aliases
        )
        for kind, _time, replica, number, iri in sorted(items.values()):
            try:
                if kind == 0:
                    self._entity(sessions[replica], iri)
                else:
                    self._fact(sessions[replica], replica, number, iri)
            except KgError as exc:
                self._aside(replica, number, iri, exc.message)
        for there, replica, number, theirs in self.closures:
            try:
                self._close(there, replica, theirs)
            except KgError as exc:
                self._aside(replica, number, theirs.iri, exc.message)
        self._drop_refused()
        return self.counts, self.set_aside, marks

    def _session(self, entries):
        """A read of one replica's journal as it stands (the fold of all its patches), with this
        knowledge base's schema, in memory."""
        from kgrdf import schema
        from kgrdf.session import Session
        from kgrdf.store import open_backend

        backend = open_backend("memory")
        schema_quads, _ext = schema.effective_quads(self.kb.path)
        backend.replace_all(
            itertools.chain(sorted(fold(entry.patch for entry in entries)), model.lines(schema_quads)), Position()
        )
        return Session(self.kb, backend)

    def _aside(self, replica: str, number: int, iri: str, reason: str) -> None:
        self.set_aside.append({"replica": replica, "patch": number, "id": vocab.id_of(iri), "reason": reason})

    def _mine(self, iri: str, what: str) -> bool:
        """Whether ``iri`` is of this fold's perspective; False for another this knowledge base
        holds (its own fold takes it). Raises Refused for one it does not hold."""
        if iri.startswith(f"{vocab.KB}{self.perspective}/"):
            return True
        if not self.first:
            return False
        perspective = vocab.perspective_of(iri)
        if self.held is None:
            self.held = {vocab.perspective_of(row["perspective"].value) for row in self.writer.rows("perspectives")}
        if perspective in self.held:
            self.others.add(perspective)
            return False
        raise Refused(f"{what} of a perspective this knowledge base does not hold ({perspective})")

    def _entity(self, there, iri: str) -> None:
        if not self._mine(iri, "an entity"):
            return
        theirs = there.entity(NamedNode(iri))
        if theirs is None:
            return  # gone there
        if theirs.merged_into:  # merged there into another: the other's fold merges it here
            if self._mine(theirs.merged_into, "an organization"):
                self._entity(there, theirs.merged_into)
            return
        ours = self.writer.entity(NamedNode(iri))
        if ours is not None and ours.merged_into:
            return  # merged here: its names are the kept one's (a replica that has not merged echoes them)
        # The organizations merged into it there: merged here too (they hold the names it took from
        # them, so the merge comes before its aliases), those not here made first, as they were when
        # merged. Left unmade, one echoed later by a replica that had not merged it (folded after,
        # in this sync or a later one) would be made apart, its name then naming two organizations,
        # and its facts set aside for good, of an entity never made here.
        merging = [
            mine
            for into in _merged_into(there, iri)
            for mine in [self.writer.entity(NamedNode(into)) or self._unmerged(there, into)]
            if mine is not None and not mine.merged_into
        ]
        if ours is None:
            taken = {name for mine in merging for name in (mine.name, *mine.aliases, *mine.weak_aliases)}
            self.writer.add_entity(
                theirs.id,
                (self._kept(iri, [theirs.name]) or [theirs.id])[0],
                [a for a in self._kept(iri, theirs.aliases) if a not in taken],
                [a for a in self._kept(iri, theirs.weak_aliases) if a not in taken],
                next(iter(self._kept(iri, [theirs.summary] if theirs.summary else [])), None),
            )
            self.counts["entities"] += 1
            ours = self.writer.entity(NamedNode(iri))
        for mine in merging:
            self.writer.merge_organizations(ours.id, mine.id)
            self.counts["merged"] += 1
        if merging:
            ours = self.writer.entity(NamedNode(iri))
        if theirs.name != ours.name or (theirs.summary or None) != (ours.summary or None):
            ours = self._rename(ours)
        aliases = [a for a in self._kept(iri, theirs.aliases) if a not in ours.aliases and a != ours.name]
        weak = [a for a in self._kept(iri, theirs.weak_aliases) if a not in ours.weak_aliases]
        if aliases or weak:
            self.writer.add_entity(ours.id, ours.name, aliases, weak)
            self.counts["entities"] += 1

    def _unmerged(self, there, iri: str):
        """The organization ``iri``, merged into another there, made here as it stood when merged
        (its name, and the names it went by then), for this fold to merge it; None when it is
        gone there or not of this perspective."""
        theirs = there.entity(NamedNode(iri))
        if theirs is None or not self._mine(iri, "an organization"):
            return None
        names = [n for n in self._kept(iri, theirs.merged_names) if n != theirs.name]
        self.writer.add_entity(
            theirs.id, (self._kept(iri, [theirs.name]) or [theirs.id])[0], names, check_aliases=False
        )
        self.counts["entities"] += 1
        return self.writer.entity(NamedNode(iri))

    def _rename(self, ours):
        """An entity whose name or summary differs there: each takes the latest a person gave it on
        any replica (by time, then replica and patch), so that every replica ends with the same."""
        name = self.originals.latest(ours.iri, "name", ours.name)
        summary = self.originals.latest(ours.iri, "summary", ours.summary)
        if (name, summary or None) == (ours.name, ours.summary or None):
            return ours
        self.writer.add_entity(ours.id, name, [], [], summary if summary != ours.summary else None)
        self.counts["entities"] += 1
        return self.writer.entity(NamedNode(ours.iri))

    def _retime(self, ours, theirs) -> None:
        """A current fact whose valid time differs there: each end takes the latest a person gave
        it on any replica (kg supersede F --valid-from, or a value ended where its replacement
        begins), as a name does (see _rename)."""
        if (theirs.valid_from, theirs.valid_to) == (ours.valid_from, ours.valid_to):
            return
        latest = self.originals.times(ours)
        changes = {end: given for end, given in latest.items() if given is not None and getattr(ours, end) != given}
        if not changes:
            return
        self.writer.retime(ours, **changes, reason="valid time as given on another replica")
        self._count("retimed", ours)

    def _count(self, what: str, fact) -> None:
        """Count ``what`` the fold did to ``fact``, taken back if the fact is set aside (_drop_refused)."""
        self.counts[what] += 1
        self.counted.setdefault(fact.iri, []).append(what)

    def _fact(self, there, replica: str, number: int, iri: str) -> None:
        from kgrdf.writer import Heard

        if not self._mine(iri, "a fact"):
            return
        try:
            theirs = there.fact(vocab.id_of(iri), history=False)
        except NotFound:
            return  # gone there (forgotten, expired past retention): nothing to fold
        if theirs.status != "rejected" and not theirs.current:
            if theirs.superseded_by:
                self.closures.append((there, replica, number, theirs))  # once every fact is folded
            return  # expired there: nothing to fold
        predicate = self.writer.schema.predicate_by_iri(theirs.predicate)
        if predicate is None:
            raise Refused(f"the predicate {theirs.predicate} is not in this knowledge base's schema")
        same = self.writer.saying(theirs)
        ours = (
            next((f for f in same if f.current), None)
            or next((f for f in same if f.status == "rejected"), None)
            or self._carried(same)
        )
        why = f"from replica {replica}"
        closed = sorted((f for f in same if f.superseded_by), key=lambda f: (f.valid_to or "", f.iri))
        settled = ours if ours is not None and not ours.current else closed[-1] if ours is None and closed else None
        if settled is not None:  # rejected or closed here: it stays so, with the sources heard there
            if groups := self._sources_new(there, theirs, settled):
                for audience, added in groups:
                    settled = self.writer.observe_settled(settled, added, [Heard(audience)], why)
                self.counts["observed"] += 1
            if ours is None and theirs.status == "rejected":  # a rejection holds on all, a closed fact too
                settled = self.writer.reject(
                    settled.id, reviewed_by=theirs.reviewed_by or "sync", reason=f"rejected on {replica}", closed=True
                ).fact
                self.counts["rejected"] += 1
            if ours is None:
                self._told(there, replica, number, theirs, settled)
                return  # closed here, replaced by another value: a closure holds as a rejection does
        if ours is None and self._forgotten(there, theirs):
            raise Refused(
                "a fact kg forget deleted here: it is never folded back, and kg sync lists it while that replica holds it"
            )
        if ours is None and self._past_retention(there, theirs):
            return  # deleted here past retention, and neither observed nor confirmed there since
        expired = next((f for f in same if f.status == "expired"), None) if ours is None else None
        if (
            expired is not None
            and theirs.status == "proposed"
            and not self._sources_new(there, theirs, expired)
            and (theirs.observed_at or "") <= (expired.observed_at or "")
        ):
            return  # expired here, and echoed there as it was heard before: nobody observed it again
        groups = self._sources_new(there, theirs, ours)
        if ours is None or (ours.current and groups):
            target = (
                {"object": vocab.id_of(theirs.target.value)}
                if theirs.is_entity_target
                else {"value": theirs.target.value}
            )
            times = (
                {}
                if ours is not None
                else {
                    "valid_from": theirs.valid_from,
                    "valid_to": theirs.valid_to,
                    "order": theirs.order,
                }
            )
            made = ours is None
            for audience, sources in groups or [("owner", list(theirs.sources))]:
                outcome = self.writer.propose(
                    vocab.id_of(theirs.subject),
                    predicate.key,
                    **target,
                    **times,
                    sources=sources,
                    authority=theirs.authority if theirs.authority != "user" else "observed",
                    prevents_rework=theirs.prevents_rework,
                    reason=why,
                    auto_confirm=False,
                    heard=[Heard(audience)],
                )
            ours = outcome.fact
            self.origin[ours.iri] = (replica, number)
            self._count("created" if made else "observed", ours)
        if theirs.status == "rejected" and ours.status != "rejected":
            self.writer.reject(ours.id, reviewed_by=theirs.reviewed_by or "sync", reason=f"rejected on {replica}")
            self._count("rejected", ours)
        elif theirs.status == "confirmed" and ours.status == "proposed":
            ours = self.writer.confirm(
                ours.id,
                reviewed_by=theirs.reviewed_by or "sync",
                reason=f"confirmed on {replica}",
                close_replaced=False,
            ).fact
            self._count("confirmed", ours)
        if ours.current and theirs.current:
            self._retime(ours, theirs)
        self._told(there, replica, number, theirs, ours)

    def _carried(self, same: list) -> object | None:
        """Of the facts ``same`` (closed here), the copy an organization merge here carried one of
        them to (kg:mergedFrom), as it stands, when current or rejected: what a review made there
        before the merge reached that replica is a review of, here."""
        for fact in same:
            seen = set()
            while fact.superseded_by and fact.superseded_by not in seen:
                seen.add(fact.superseded_by)
                try:
                    after = self.writer.fact(vocab.id_of(fact.superseded_by), history=False)
                except NotFound:
                    break
                if after.merged_from != fact.iri:
                    break  # closed by a correction or a confirmation: the closure holds (see _close)
                if after.current or after.status == "rejected":
                    return after
                fact = after
        return None

    def _told(self, there, replica: str, number: int, theirs, ours) -> None:
        """What that replica recorded telling of its fact (kg disclose), recorded of ours too: which
        replica told an audience a fact is no reason for kg told to answer otherwise here."""
        from kgrdf import disclosure

        if (replica, theirs.iri) not in self.told:
            return  # (no patch folded now records one: nothing to read)
        held = self.writer.fact(ours.id, history=False)  # (as this write holds it now: its hearings folded)
        added, unheard = disclosure.fold(self.writer, held, there, theirs.iri)
        self.counts["told"] += added
        for audience in unheard:
            self._aside(
                replica, number, theirs.iri, f"a disclosure to {audience}, which may hear none of its hearings here"
            )

    def _forgotten(self, there, theirs) -> bool:
        """Whether kg forget deleted a fact here that says what ``theirs`` says (forgotten.jsonl
        keeps the keyed digest of what it said), of its subject or object or of an organization
        merged into it there: a merge there carries the fact over to the one kept, as a new fact."""
        if self.deleted is None:
            return False
        return self.deleted.fact(theirs, lambda iri: [iri, *_merged_into(there, iri)])

    def _past_retention(self, there, theirs) -> bool:
        """Whether kg expire deleted here past retention a fact that says what ``theirs`` says, and
        it was neither observed nor confirmed there since (privacy.Forgotten.past_retention)."""
        if self.deleted is None:
            return False
        return self.deleted.past_retention(theirs, lambda iri: [iri, *_merged_into(there, iri)])

    def _kept(self, iri: str, labels) -> list[str]:
        """Of an entity's names there, those kg forget did not take from it here (they named the
        person forgotten)."""
        if self.deleted is None:
            return list(labels)
        return [label for label in labels if not self.deleted.label(iri, label)]

    def _close(self, there, replica: str, theirs) -> None:
        """A fact another replica closed, replaced by another (a person confirmed a rival value, or
        superseded it): closed here too, replaced by this knowledge base's fact that says what its
        replacement says. A replacement closed there in turn (superseded twice between two syncs)
        is followed to the fact that replaced it, and so on, to the one current there; the fact here
        ends where its own replacement began. One whose replacement is not here is set aside."""
        ours = next((f for f in self.writer.saying(theirs) if f.current), None)
        if ours is None:
            return  # not held here, or closed or rejected here already
        successor, first, seen = theirs, None, set()
        while successor is not None and successor.superseded_by and successor.iri not in seen:
            seen.add(successor.iri)
            try:
                successor = there.fact(vocab.id_of(successor.superseded_by), history=False)
            except NotFound:
                successor = None
            first = first or successor
            if successor is not None and successor.current:
                break
        replacement = (
            next((f for f in self.writer.saying(successor) if f.current), None) if successor is not None else None
        )
        if replacement is None and successor is not None:
            # People on two replicas each chose a value, each closing the others': the later choice
            # holds on both. Here the value theirs chose was closed by a choice (a confirmed fact
            # closed, not rejected): when that choice is the later, it holds, and nothing changes
            # here (their replica, folding ours, does the same the other way round); when theirs is
            # the later and ours made the choice here, the value it chose holds again, ours closed.
            closed = [f for f in self.writer.saying(successor) if f.superseded_by and f.status == "confirmed"]
            if closed and max(self._choice(f, self.kb.replica) for f in closed) >= self._choice(theirs, replica):
                return  # the choice that closed it here is the later: it holds
            mine = next((f for f in closed if f.superseded_by == ours.iri), None)
            if mine is not None:
                replacement = self.writer.reopen(mine.id, f"chosen again on {replica}, later than here")
        if replacement is None:
            raise Refused(f"it was closed on {replica}, replaced by a fact that is not current here")
        ends = first.valid_from if first is not successor else None
        chosen, by = self.chosen[ours.iri] = self._choice(theirs, replica)
        why = f"as on {replica}, chosen there at {chosen}" + (f" on {by}" if by != replica else "")
        self.writer.close_for(ours.id, replacement.id, why, starts=successor.valid_from, ends=ends)
        self.counts["closed"] += 1

    def _choice(self, fact, replica: str) -> tuple[str, str]:
        """When, and on which replica, a person's choice closed the fact (held on ``replica``): the
        time of its closing, or, for a closing kg sync folded in, the choice it followed, which the
        closing's reason says (its time is the fold's); for one this fold closed, the choice it
        followed (its record is not read back until the write ends)."""
        if fact.iri in self.chosen:
            return self.chosen[fact.iri]
        closing = next((u for u in reversed(fact.updates) if "superseded_by" in u.changes), None)
        if closing is None:
            return (fact.retired_at or "", replica)
        said = _CHOSEN.search(closing.reason or "")
        if said is None:
            return (closing.at, replica)
        return (said["at"], said["by"] or said["on"])

    def _sources_new(self, there, theirs, ours) -> list[tuple[str, list]]:
        """:meth:`_heard_new`, less each source kg forget took out of a fact that says what
        ``theirs`` says here (its ref or quote named the person: forgotten.jsonl keeps the keyed
        digest of what the fact said with it): another replica that still holds it never brings it
        back."""
        groups = self._heard_new(theirs, ours)
        if self.deleted is None or not groups:
            return groups

        def merged(iri):
            return [iri, *_merged_into(there, iri)]

        kept = []
        for audience, sources in groups:
            left = [
                source
                for source in sources
                if not any(self.deleted.said_with_text(theirs, text, merged) for text in (source.ref, source.quote))
            ]
            if left:
                kept.append((audience, left))
        return kept

    @staticmethod
    def _heard_new(theirs, ours) -> list[tuple[str, list]]:
        """Each audience ``theirs`` was heard in, with the sources heard there that ``ours`` (None:
        no fact here yet) does not hold, for those that bring one. A source goes with the hearings
        that brought it: folded into every hearing, one heard in a channel alone would be shown to
        every audience the fact was heard in (SPEC §9: aggregation never widens an audience). A
        source held here already, in whichever hearing, brings no hearing: the fold errs narrow."""
        held = {(s.kind, s.ref) for s in ours.sources} if ours is not None else set()
        groups: dict[str, dict] = {}
        hearings = theirs.hearings or [model.Hearing(None, "owner", tuple(theirs.sources))]
        for hearing in hearings:
            sources = hearing.sources or (theirs.sources if len(hearings) == 1 else ())
            kept = groups.setdefault(hearing.audience or "owner", {})
            for source in sources:
                if (source.kind, source.ref) not in held:
                    kept.setdefault((source.kind, source.ref), source)
        return [(audience, list(kept.values())) for audience, kept in sorted(groups.items()) if kept]

    def _drop_refused(self) -> None:
        """The shapes over what the fold staged: a fact that fails is taken out and set aside; an
        entity that fails refuses the sync (its facts may name it), and nothing is folded."""
        findings, _inherited = self.writer.refusable(self.writer.findings())
        pending = self.writer.pending_facts()
        for finding in findings:
            if finding.severity != "violation":
                continue
            focus = finding.fact
            if focus not in pending:
                raise Refused(f"a pulled entity fails the shapes here: {finding.message}", hint="tell the hub's keeper")
            origin = self.origin.get(focus) or self.origin.get(pending[focus].merged_from or "")
            if origin is None:  # (a fact a merge this fold makes carries here: set aside, it would never be retried)
                raise Refused(
                    f"a merge this sync makes here carries {vocab.id_of(pending[focus].merged_from or focus)}, which "
                    f"fails the shapes here: {finding.message}",
                    hint="kg reject it (or put back the schema.json it was written under), then kg sync again",
                )
            self.writer.drop_fact(focus)
            self._aside(*origin, focus, finding.message)
            for what in self.counted.pop(focus, []):  # (set aside: not folded in)
                self.counts[what] -= 1


_LABELS = {vocab.PREF_LABEL.value: "name", vocab.SUMMARY.value: "summary"}
_TIMES = {vocab.kg("validFrom").value: "valid_from", vocab.kg("validTo").value: "valid_to"}
_ENDING = {vocab.kg("supersededBy").value, vocab.kg("retiredAt").value}  # a fact closed, rejected or expired
_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_PROVENANCE = "/provenance"


def _merged_into(there, iri: str) -> list[str]:
    """Every organization merged into ``iri`` on the replica ``there`` reads, and each merged into
    those before (Umbra into Umbra Labs, then Umbra Labs into Umbra Group): a fold that merged only
    the last would keep Umbra apart, and the kept one's names, Umbra's among them, would clash."""
    merges = there.merges()
    found, todo = [], [iri]
    while todo:
        for one in sorted(merges.get(todo.pop(), ())):
            if one not in found and one != iri:
                found.append(one)
                todo.append(one)
    return found


class _Originals:
    """What a person changed on each replica, as opposed to what a sync folded in there: the latest
    name and summary given to each entity, and the latest valid time given to each fact still current
    (by what it says), each with its patch's time, replica and number, read from every journal this
    knowledge base holds (its own two, and each other replica's in ``replicas/``).

    Where two replicas differ, the fold takes the latest change by time, then replica and number, so
    every replica that has seen the same patches ends with the same, whatever order it synced in. A
    sync's own patch changes nothing here: it holds what it folded in at a later time, and would hand
    an older value back as a newer one. Read once a sync, at the first difference met (they are few:
    a rename, a retime), not at each sync."""

    def __init__(self, kb, deleted: "privacy.Forgotten | None" = None):
        self.kb = kb
        self.deleted = deleted  # a name or summary forget took here is none a person gave
        self.labels: dict | None = None  # (entity IRI, "name" | "summary") -> (time, replica, number, value)
        self.valid: dict = {}  # ((subject, predicate, value key), "valid_from" | "valid_to") -> the same

    def latest(self, iri: str, field: str, held):
        """The latest ``field`` ("name", "summary") a person gave the entity ``iri``; ``held`` when none did."""
        self._read()
        found = self.labels.get((iri, field))
        return found[3] if found else held

    def times(self, fact) -> dict:
        """The latest start and end (``valid_from``, ``valid_to``) a person gave a fact that says
        what ``fact`` says, on any replica, after it was made; an end none changed is left out."""
        self._read()
        said = (fact.subject, fact.predicate, fact.value_key())
        return {end: found[3] for end in _TIMES.values() if (found := self.valid.get((said, end)))}

    def _read(self) -> None:
        if self.labels is not None:
            return
        self.labels, changed, said, ended = {}, {}, {}, set()
        # (this replica's private journal too: a name that names one of its people stays its own)
        journals = [(self.kb.replica, self.kb.journal.shared), (self.kb.replica, self.kb.journal.local)]
        base = self.kb.path / REPLICAS
        if base.is_dir():
            journals += [(f.name, Stream(f)) for f in sorted(base.iterdir()) if REPLICA.match(f.name)]
        for replica, stream in journals:
            for entry in stream.entries_after(None, 0, None, []):
                self._patch(replica, entry, changed, said, ended, pulled=replica != self.kb.replica)
        for (fact, end), found in changed.items():
            if fact in ended or fact not in said:
                continue  # (a fact closed since holds the time its closing gave it)
            _later(self.valid, (said[fact], end), found)

    def _patch(self, replica: str, entry, changed: dict, said: dict, ended: set, pulled: bool = False) -> None:
        """Note what one patch says: what each fact it makes says, which facts it ends, and (when a
        person made it, not a sync) the names, summaries and valid times it gives: of a ``pulled``
        one (another replica's), none that kg forget took here (what a person here gives again, by
        hand, after the forget, is theirs to give)."""
        patch = entry.patch
        by_hand = patch.command != "sync"
        stamp = (patch.time, replica, number_of(entry.name))
        made, times = set(), {}
        for line in patch.adds:
            graph = nquads.graph_of(line)
            if graph.endswith(_PROVENANCE):
                predicate = nquads.predicate_of(line)
                fact = graph[: -len(_PROVENANCE)]
                if nquads.subject_of(line) != fact:
                    continue
                if predicate in _ENDING:
                    ended.add(fact)
                elif predicate == _TYPE:
                    made.add(fact)
                elif predicate in _TIMES and by_hand:
                    times[(fact, _TIMES[predicate])] = _value(line)
            elif privacy.is_entities_graph(graph):
                field = _LABELS.get(nquads.predicate_of(line)) if by_hand else None
                if field:
                    subject, value = nquads.subject_of(line), _value(line)
                    if not pulled or self.deleted is None or not self.deleted.label(subject, value):
                        _later(self.labels, (subject, field), (*stamp, value))
            elif "/fact/" in graph and vocab.FACT_ID_PATTERN.match(graph.rsplit("/", 1)[-1]):
                subject, predicate, value, datatype, _graph = next(nquads.fields([line]))
                said[graph] = (subject, predicate, value if datatype is None else model.normalize(value))
        if not by_hand:
            return
        for line in patch.deletes:  # an end taken away and not given again
            graph = nquads.graph_of(line)
            field = _TIMES.get(nquads.predicate_of(line)) if graph.endswith(_PROVENANCE) else None
            if field and nquads.subject_of(line) == graph[: -len(_PROVENANCE)]:
                times.setdefault((graph[: -len(_PROVENANCE)], field), None)
        for (fact, end), value in times.items():
            if fact not in made:  # (a new fact's valid time is what it was proposed with, no change)
                _later(changed, (fact, end), (*stamp, value))


def _value(line: str) -> str:
    return next(nquads.fields([line]))[2]


def _later(latest: dict, key, found: tuple) -> None:
    """Keep ``found`` under ``key`` when it is later (by time, replica and number) than what is there."""
    if key not in latest or found[:3] > latest[key][:3]:
        latest[key] = found
