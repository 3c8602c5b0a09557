"""An audience's kept dataset (kgrdf.heard) followed fact by fact through every kind of write: after
any sequence of writes, `kg sparql --audience A` answered from the kept set equals the answer of a
set made afresh. The writes are drawn at random (seeded: the same walk every run), mixing imports of
more than 100 facts small beside the sets (followed fact by fact since cc176df, where any write of
more than 2,000 rows made them whole), re-observations heard in other audiences, proposals,
confirmations, rejections, corrections, names, organizations, claims and their promotion, merges,
disclosures and expiry, with the kept sets of several audiences queried between them."""

import json
import random
import shutil

import pytest

from kgrdf import heard
from kgrdf.cli import app

from .conftest import Kg, runner

EVERYTHING = "SELECT ?g ?s ?p ?o WHERE { { GRAPH ?g { ?s ?p ?o } } UNION { ?s ?p ?o } }"
READERS = ("public", "channel:sales", "dm:ann,bob", "workspace:acme")  # at most heard.KEPT: none is dropped
SAID_IN = ("public", "channel:sales", "dm:ann,bob", "dm:ann", "dm:ann,bob,cy", "workspace:acme", "owner")
UNHEARD = ("channel:eng", "dm:cy,dan", "workspace:other", "owner")  # none of READERS hears these
FACTS = (
    "PREFIX kg: <https://kgrdf.org/ns#> PREFIX dcterms: <http://purl.org/dc/terms/> "
    "SELECT ?id ?s ?p ?o ?status WHERE { GRAPH ?f { ?s ?p ?o } "
    "GRAPH ?m { ?f a kg:Fact ; dcterms:identifier ?id ; kg:factStatus ?status } }"
)
STEPS = 30  # writes a walk makes
KEYS = {"dependsOn": "depends_on", "partOf": "part_of", "customerOf": "customer_of", "vendorOf": "vendor_of"}


def _rows(document: str) -> list[tuple]:
    bindings = json.loads(document)["results"]["bindings"]
    return sorted(tuple(row.get(name, {}).get("value", "") for name in ("g", "s", "p", "o")) for row in bindings)


def _same_as_afresh(kg: Kg, readers) -> dict[str, list]:
    """Each reader's answer from its kept set, checked against a set made afresh; the kept sets are
    put back after, so that the next check follows them over the writes in between."""
    kept = {a: _rows(kg("sparql", EVERYTHING, "--audience", a, "--json").stdout) for a in readers}
    sets, aside = kg.path / "cache" / "heard", kg.path / "cache" / "heard.kept"
    sets.rename(aside)
    try:
        fresh = {a: _rows(kg("sparql", EVERYTHING, "--audience", a, "--json").stdout) for a in readers}
    finally:
        shutil.rmtree(sets, ignore_errors=True)
        aside.rename(sets)
    for reader in readers:
        leaked = sorted(set(kept[reader]) - set(fresh[reader]))
        missing = sorted(set(fresh[reader]) - set(kept[reader]))
        assert not leaked and not missing, f"{reader}: leaked {leaked[:10]}, missing {missing[:10]}"
    return kept


class Followed:
    """Counts catch_up's answers: how many changes were followed fact by fact, how many of those
    were of more than 2,000 rows (made whole before cc176df: the path it opened), how many not."""

    def __init__(self, monkeypatch):
        self.followed = self.large = self.whole = 0
        catch_up = heard.HeardSet.catch_up

        def counted(set_, session, transactions):
            done = catch_up(set_, session, transactions)
            rows = sum(len(tx.deletes) + len(tx.adds) for tx in transactions)
            self.followed += done
            self.large += done and rows > 2000
            self.whole += not done
            return done

        monkeypatch.setattr(heard.HeardSet, "catch_up", counted)


class Walk:
    """A random walk of writes on one knowledge base, each a kg command as a user types it."""

    def __init__(self, kg: Kg, seed: int, monkeypatch):
        self.kg, self.rng, self.monkeypatch = kg, random.Random(seed), monkeypatch
        self.clock = 1_800_000_000
        self.repos = [f"repo/r{n}" for n in range(8)]
        self.people = ["person/ann", "person/bob", "person/cy"]
        self.orgs = ["organization/o1", "organization/o2", "organization/o3"]
        self.claims: list[str] = []
        self.done: list[str] = []  # the commands that went through, to say how to repeat a failure
        self.files = 0

    def tick(self, seconds: int = 60) -> None:
        import time

        self.clock += seconds
        self.monkeypatch.setenv("KGRDF_NOW", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.clock)))

    def run(self, *args):
        """The command, or its refusal (a random write may be refused: that is no failure)."""
        self.tick()
        result = runner.invoke(app, [str(a) for a in args] + ["--kb", str(self.kg.path)])
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        if result.exit_code == 0:
            self.done.append(" ".join(str(a) for a in args))
        return result

    def facts(self) -> list[dict]:
        out = []
        for row in json.loads(self.kg("sparql", FACTS, "--json").stdout)["results"]["bindings"]:
            predicate = row["p"]["value"].rsplit("#", 1)[1]
            fact = {
                "id": row["id"]["value"],
                "subject": row["s"]["value"].split("/kb/main/")[1],
                "predicate": KEYS.get(predicate, predicate),
                "status": row["status"]["value"].rsplit("#", 1)[1].lower(),
            }
            if row["o"]["type"] == "uri":
                fact["object"] = row["o"]["value"].split("/kb/main/")[1]
            else:
                fact["value"] = row["o"]["value"]
            out.append(fact)
        # by what they say, not by id: an id is minted from the replica's (random) name; the walk is the seed's
        return sorted(
            out, key=lambda f: [f.get(k) or "" for k in ("subject", "predicate", "object", "value", "status")]
        )

    def pick(self, *statuses: str) -> dict | None:
        facts = [f for f in self.facts() if not statuses or f["status"] in statuses]
        return self.rng.choice(facts) if facts else None

    def source(self) -> str:
        return f"slack:m{self.rng.randrange(10**9)}"

    def new_fact(self, quiet: bool) -> dict:
        rng = self.rng
        audience = rng.choice(SAID_IN[:-1] + ("public", "public"))
        if quiet and rng.random() < 0.6:
            audience = rng.choice(UNHEARD)
        elif not quiet and rng.random() < 0.4:
            audience = "public"
        record = {"type": "fact", "sources": [self.source()], "audience": audience}
        kind = rng.random()
        if kind < 0.6:
            record |= {"subject": rng.choice(self.repos), "predicate": "caveat", "value": f"v{rng.randrange(10**6)}"}
        elif kind < 0.85:
            subject, target = rng.sample(self.repos, 2)
            record |= {"subject": subject, "predicate": rng.choice(["depends_on", "uses", "part_of"]), "object": target}
        else:
            record |= {"subject": rng.choice(self.people), "predicate": "reviews", "object": rng.choice(self.repos)}
        if rng.random() < 0.2:
            record["said_by"] = rng.choice(self.people)
        if rng.random() < 0.1:
            record["message"] = f"https://chat.example/m{rng.randrange(1000)}"
        return record

    def imported(self, count: int, first: bool = False) -> None:
        rng = self.rng
        records = []
        if first:
            records += [{"type": "entity", "id": repo, "name": repo.split("/")[1].upper()} for repo in self.repos]
        else:
            if rng.random() < 0.5:  # an entity the import makes, named by some of its facts
                self.repos.append(f"repo/n{len(self.repos)}")
                records.append({"type": "entity", "id": self.repos[-1], "name": f"N{len(self.repos)}"})
            if rng.random() < 0.5:  # a name and an alias for one it holds
                records.append(
                    {
                        "type": "entity",
                        "id": rng.choice(self.repos),
                        "name": f"Renamed{rng.randrange(1000)}",
                        "aliases": [f"aka{rng.randrange(1000)}"],
                    }
                )
        known = [] if first else self.facts()
        elsewhere = rng.choice([0, 0, 0, 1, 2])  # facts it hears again in another audience
        for _ in range(count):
            if known and rng.random() < 0.15:  # a known fact heard again: by the owner, or elsewhere
                fact = rng.choice(known)
                audience = "owner" if not elsewhere else rng.choice(SAID_IN)
                elsewhere = max(0, elsewhere - 1)
                record = {"type": "fact", "subject": fact["subject"], "predicate": fact["predicate"]}
                record |= {"object": fact["object"]} if "object" in fact else {"value": fact["value"]}
                records.append(record | {"sources": [self.source()], "audience": audience})
            else:
                records.append(self.new_fact(quiet=not first))
        self.files += 1
        path = self.kg.path.parent / f"import-{self.files}.jsonl"
        path.write_text("".join(json.dumps(record) + "\n" for record in records))
        assert self.run("import", path, "--apply").exit_code == 0

    def setup(self, first: int) -> None:
        self.run("org", "init", "Acme", "--id", "organization/acme")
        for org in self.orgs:
            self.run("org", "add", org.split("/")[1].upper(), "--id", org)
        for person in self.people:
            self.run("add-entity", person, "--name", person.split("/")[1].title())
        self.imported(first, first=True)

    # --- the writes -------------------------------------------------------------------------------

    def step(self) -> None:
        """A write, and as often as not a check of the kept sets of some readers: the others follow
        the writes since their last check, several at once."""
        write = self.rng.choices(
            ["import_", "propose", "confirm", "reject", "supersede", "names", "org", "disclose", "expire"],
            [3, 3, 2, 2, 2, 2, 3, 1, 1],
        )[0]
        getattr(self, write)()
        if self.rng.random() < 0.6:
            self.check()

    def import_(self) -> None:
        self.imported(self.rng.randint(101, 130))

    def propose(self) -> None:
        rng = self.rng
        known = self.pick()
        if known and rng.random() < 0.5:  # heard again, perhaps in an audience that could not hear it
            target = ["--object", known["object"]] if "object" in known else ["--value", known["value"]]
            subject, predicate, audience = known["subject"], known["predicate"], rng.choice(SAID_IN)
        else:
            record = self.new_fact(quiet=False)
            target = ["--object", record["object"]] if "object" in record else ["--value", record["value"]]
            subject, predicate, audience = record["subject"], record["predicate"], record["audience"]
        self.run("propose", subject, predicate, *target, "--source", self.source(), "--audience", audience)

    def confirm(self) -> None:
        if fact := self.pick("proposed"):
            self.run("confirm", fact["id"])

    def reject(self) -> None:
        fact, other = self.pick("proposed", "confirmed"), self.pick()
        if fact:  # its reason names another fact, which an audience may or may not hear
            self.run("reject", fact["id"], "--reason", f"the same as {other['id']}")

    def supersede(self) -> None:
        rng = self.rng
        fact, other = self.pick("proposed", "confirmed"), self.pick()
        if not fact:
            return
        new = ["--object", rng.choice(self.repos)] if "object" in fact else ["--value", f"s{rng.randrange(10**6)}"]
        if rng.random() < 0.5:
            new += ["--audience", rng.choice(SAID_IN)]
        if rng.random() < 0.5:
            new += ["--reason", f"see {other['id']}"]
        self.run("supersede", fact["id"], *new, "--source", self.source())

    def names(self) -> None:
        rng = self.rng
        more = rng.choice([["--alias", f"a{rng.randrange(10**4)}"], ["--weak-alias", f"w{rng.randrange(10**4)}"], []])
        self.run("add-entity", rng.choice(self.repos + self.people), "--name", f"N{rng.randrange(10**4)}", *more)

    def org(self) -> None:
        rng = self.rng
        what = rng.choice(["set", "relation", "affiliate", "promote", "merge"])
        if what == "set":
            self.run(
                "org", "set", rng.choice(self.orgs), "industry", f"i{rng.randrange(100)}",
                "--source", self.source(), "--audience", rng.choice(SAID_IN),
            )  # fmt: skip
        elif what == "relation":
            one, other = rng.sample(self.orgs + ["organization/acme"], 2)
            self.run(
                "propose", one, rng.choice(["customer_of", "vendor_of"]), "--object", other,
                "--source", self.source(), "--audience", rng.choice(SAID_IN),
            )  # fmt: skip
        elif what == "affiliate":
            said = self.run(
                "org", "affiliate", rng.choice(self.orgs), "--claimed-name", rng.choice(["Jim", "Kim"]),
                "--said-by", rng.choice(self.people), "--source", self.source(),
                "--audience", rng.choice(SAID_IN), "--json",
            )  # fmt: skip
            if said.exit_code == 0:
                self.claims.append(json.loads(said.stdout)["id"])
        elif what == "promote" and self.claims:
            self.run("org", "promote", rng.choice(self.claims), rng.choice(self.people))
        elif what == "merge" and len(self.orgs) > 1:
            keep, gone = rng.sample(self.orgs, 2)
            if self.run("org", "merge", keep, gone).exit_code == 0:
                self.orgs.remove(gone)

    def disclose(self) -> None:
        if fact := self.pick():
            message = f"m{self.rng.randrange(1000)}"
            self.run("disclose", fact["id"], "--message", message, "--audience", self.rng.choice(READERS))

    def expire(self) -> None:
        self.tick(self.rng.choice([10, 40]) * 86400)  # proposals not observed for 30 days expire
        self.run("expire")

    def check(self) -> None:
        readers = self.rng.sample(READERS, self.rng.choice([1, 1, 2, 4]))
        self.done.append(f"# check {' '.join(readers)}")
        _same_as_afresh(self.kg, readers)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [5])
def test_kept_sets_follow_a_random_walk_of_writes_as_sets_made_afresh_do(kg, tmp_path, monkeypatch, seed):
    """After every kind of write, imports of 101 to 130 facts followed fact by fact among them, each
    audience's kept set answers as one made afresh does: no fact, hearing, source, name or promotion
    it may not hear, none it may missing."""
    followed = Followed(monkeypatch)
    walk = Walk(kg, seed, monkeypatch)
    walk.setup(first=700)
    _same_as_afresh(kg, READERS)
    try:
        for _ in range(STEPS):
            walk.step()
        _same_as_afresh(kg, READERS)
    except AssertionError as failed:
        raise AssertionError(f"seed {seed}, after:\n" + "\n".join(walk.done[-40:])) from failed
    print(f"seed {seed}: {followed.followed} followed ({followed.large} large), {followed.whole} made whole")
    assert followed.followed >= 10 and followed.large >= 2  # the walk took the path it tests


def test_a_kept_set_follows_an_import_of_more_facts_than_one_query_reads_the_hearings_of(kg, tmp_path, monkeypatch):
    """An import of 560 records (523 facts: more than Reading.may_hear_many reads a query,
    HEARD_AT_ONCE) onto sets of about 1,000 facts is followed fact by fact, mostly facts the
    readers may not hear, some they may, known facts heard again by the owner, facts naming
    entities; each set answers as one made afresh does."""
    followed = Followed(monkeypatch)
    repos = [{"type": "entity", "id": f"repo/r{n}", "name": f"R{n}"} for n in range(8)]

    def imported(name: str, records: list[dict]) -> None:
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(record) + "\n" for record in records))
        kg("import", path, "--apply")

    def caveat(n: int, value: str, audience: str) -> dict:
        return {
            "type": "fact", "subject": f"repo/r{n % 8}", "predicate": "caveat", "value": value,
            "sources": [f"slack:{value}-{audience}"], "audience": audience,
        }  # fmt: skip

    first = [caveat(n, f"a{n}", READERS[n % 4] if n % 5 == 0 else "public") for n in range(1100)]
    imported("first", repos + first)
    _same_as_afresh(kg, ("public", "dm:ann,bob"))
    records = []
    for n in range(560):
        audience = (*READERS, "dm:ann")[n % 5] if n % 7 == 0 else "channel:eng"
        if n % 9 == 0:
            records.append(caveat(n, f"a{n}", "owner"))
        elif n % 11 == 0:
            link = {"predicate": "depends_on", "object": f"repo/r{(n + 1) % 8}", "sources": [f"slack:l{n}"]}
            records.append({"type": "fact", "subject": f"repo/r{n % 8}", "audience": audience, **link})
        else:
            records.append(caveat(n, f"b{n}", audience))
    imported("second", records)
    _same_as_afresh(kg, ("public", "dm:ann,bob"))
    assert followed.large == 2 and followed.whole == 0
