"""The ``kg`` command: parse the arguments, make one library call, render (§6, §7).

Every command takes ``--kb`` (else KGRDF_HOME, else the user data folder) and ``--json``. Exit
codes: 0 done, 1 refused, 2 bad usage or input, 3 damaged or locked. Expected errors print one line
on stderr (and, with --json, one JSON document on stdout); never a traceback.
"""

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from kgrdf import render
from kgrdf.errors import KgError


class _Commands(TyperGroup):
    """Turns the errors we expect into one line (or one JSON document) and their exit code."""

    def invoke(self, ctx):
        as_json = "--json" in [*getattr(ctx, "protected_args", []), *ctx.args]
        try:
            return super().invoke(ctx)
        except KgError as exc:
            render.error(exc, as_json)
            ctx.exit(exc.exit_code)


app = typer.Typer(
    cls=_Commands,
    name="kg",
    help="kgrdf: the working facts of an organization, with sources, two timelines and review, on RDF.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

KbOption = Annotated[
    Optional[Path],
    typer.Option("--kb", help="The knowledge base folder. Default: $KGRDF_HOME, else ~/.local/share/kgrdf.",
                 show_default=False),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document for programs.")]
SourceOption = Annotated[
    Optional[list[str]],
    typer.Option("--source", "-s", help="Where it came from, KIND:REF (repeat). Kinds: user, ledger, report, "
                 "memory, transcript, profile (trusted); slack, pr, ticket, doc, chat (untrusted)."),
]
ObjectOption = Annotated[Optional[str], typer.Option("--object", "-o", help="The object: an entity id, name or alias.")]
ValueOption = Annotated[Optional[str], typer.Option("--value", "-v", help="The value: text (or a date for dated predicates).")]
ReasonOption = Annotated[Optional[str], typer.Option("--reason", help="Why, kept in the fact's history.")]


def _kb(path: Optional[Path], backend: str = "oxigraph"):
    from kgrdf.kb import KnowledgeBase, default_home

    return KnowledgeBase.open(path or default_home(), backend=backend)


def _write_fact(kb: Optional[Path], command: str, as_json: bool, change) -> None:
    """Run one fact-changing library call in a write, then render the fact it leaves and any warning."""
    with _kb(kb).writing(command) as writer:
        outcome = change(writer)
        shown = writer.describe(outcome.fact)
    render.outcome(as_json, outcome, shown, writer.warnings)


def _time(text: Optional[str], what: str):
    from kgrdf import clock

    return clock.parse_time(text, what) if text else None


# --- writing --------------------------------------------------------------------------------------


@app.command()
def init(
    kb: KbOption = None,
    perspective: Annotated[str, typer.Option(help="The knowledge base's default perspective (whose knowledge).")] = "main",
    json: JsonOption = False,
):
    """Make a new, empty knowledge base (a folder with a journal, an index and a git history)."""
    from kgrdf.kb import KnowledgeBase, default_home

    base = KnowledgeBase.create(kb or default_home(), perspective=perspective)
    render.out(json, {"kb": str(base.path), "perspective": base.perspective, "replica": base.replica},
               f"made a knowledge base at {base.path} (perspective {base.perspective})")


@app.command("add-entity")
def add_entity(
    entity_id: Annotated[str, typer.Argument(metavar="ID", help="TYPE/NAME in lower case, e.g. person/dana, repo/web-app.")],
    name: Annotated[str, typer.Option("--name", "-n", help="The entity's name (skos:prefLabel).")],
    alias: Annotated[Optional[list[str]], typer.Option("--alias", "-a", help="A strong alias: a true synonym (repeat).")] = None,
    weak_alias: Annotated[Optional[list[str]], typer.Option("--weak-alias", help="A weak alias: a related term, searchable, never an identity (repeat).")] = None,
    summary: Annotated[Optional[str], typer.Option(help="A short description (never for a person).")] = None,
    kb: KbOption = None,
    json: JsonOption = False,
):
    """Add an entity, or add names to one: a new name or summary replaces the old, aliases add up."""
    base = _kb(kb)
    with base.writing("add-entity") as writer:
        entity, outcome = writer.add_entity(entity_id, name, alias or [], weak_alias or [], summary)
    render.out(json, {**entity.as_json(), "outcome": outcome}, f"{outcome} {entity.id} ({entity.name})")


@app.command()
def identify(
    name: Annotated[str, typer.Argument(help="A name, alias or id.")],
    kb: KbOption = None,
    json: JsonOption = False,
):
    """Which entity a name means: by id, name or strong alias. Weak aliases only suggest.

    Exits 1 when nothing matches or the name is ambiguous.
    """
    with _kb(kb).reading() as session:
        found = session.identify(name)
    render.identify(json, found)
    if len(found["matches"]) != 1:
        raise typer.Exit(1)


@app.command()
def propose(
    subject: Annotated[str, typer.Argument(help="The subject: an entity id, name or alias.")],
    predicate: Annotated[str, typer.Argument(help="A predicate of the schema (kg schema lists them), e.g. reviews.")],
    object: ObjectOption = None,
    value: ValueOption = None,
    source: SourceOption = None,
    authority: Annotated[str, typer.Option(help="user, stakeholder, observed or inferred.")] = "observed",
    valid_from: Annotated[Optional[str], typer.Option(help="When it became true (YYYY-MM-DD or ISO time).")] = None,
    valid_to: Annotated[Optional[str], typer.Option(help="When it stopped being true.")] = None,
    order: Annotated[Optional[int], typer.Option(help="Place in a sequence, for has_step.")] = None,
    prevents_rework: Annotated[bool, typer.Option("--prevents-rework", help="Not knowing it once caused rework.")] = False,
    reason: ReasonOption = None,
    kb: KbOption = None,
    json: JsonOption = False,
):
    """Propose a fact. Proposing a known fact again observes it again; a rejected one stays rejected."""
    _write_fact(kb, "propose", json, lambda writer: writer.propose(
        subject, predicate, object=object, value=value, sources=source or [], authority=authority,
        valid_from=valid_from, valid_to=valid_to, order=order, prevents_rework=prevents_rework, reason=reason))


@app.command()
def confirm(
    fact_id: Annotated[str, typer.Argument(metavar="ID", help="The fact id, e.g. f-3k9x2a.")],
    reason: ReasonOption = None,
    kb: KbOption = None,
    json: JsonOption = False,
):
    """Confirm a fact. For a single-valued predicate this closes the confirmed value it replaces."""
    _write_fact(kb, "confirm", json, lambda writer: writer.confirm(fact_id, reason=reason))


@app.command()
def reject(
    fact_id: Annotated[str, typer.Argument(metavar="ID", help="The fact id.")],
    reason: ReasonOption = None,
    kb: KbOption = None,
    json: JsonOption = False,
):
    """Reject a fact: it leaves current reads and stays rejected if proposed again."""
    _write_fact(kb, "reject", json, lambda writer: writer.reject(fact_id, reason=reason))


@app.command()
def supersede(
    fact_id: Annotated[str, typer.Argument(metavar="ID", help="The current fact to correct.")],
    object: ObjectOption = None,
    value: ValueOption = None,
    source: SourceOption = None,
    valid_from: Annotated[Optional[str], typer.Option(help="When the new value became true (default: now).")] = None,
    reason: ReasonOption = None,
    kb: KbOption = None,
    json: JsonOption = False,
):
    """Correct a fact: record the new object or value, confirmed, and close the old one (kept in history)."""
    _write_fact(kb, "supersede", json, lambda writer: writer.supersede(
        fact_id, object=object, value=value, sources=source or [], valid_from=valid_from, reason=reason))


# --- reading --------------------------------------------------------------------------------------


@app.command()
def lookup(
    entity: Annotated[str, typer.Argument(help="An entity id, name or alias.")],
    kb: KbOption = None,
    json: JsonOption = False,
):
    """An entity and its current facts with their sources, and the facts that point to it."""
    with _kb(kb).reading() as session:
        result = session.lookup(entity)
    render.lookup(json, result)


@app.command()
def facts(
    subject: Annotated[str, typer.Argument(help="An entity id, name or alias.")],
    predicate: Annotated[Optional[str], typer.Option("--predicate", "-p", help="Only this predicate.")] = None,
    as_of: Annotated[Optional[str], typer.Option(help="Valid time: what was true in the world at T.")] = None,
    known_at: Annotated[Optional[str], typer.Option(help="Transaction time: what the knowledge base held at T.")] = None,
    all: Annotated[bool, typer.Option("--all", help="Every fact: proposed, confirmed, rejected, expired and closed.")] = False,
    kb: KbOption = None,
    json: JsonOption = False,
):
    """Facts about a subject: current by default; --as-of and --known-at combine."""
    when, known = _time(as_of, "--as-of"), _time(known_at, "--known-at")
    with _kb(kb).reading() as session:
        result = session.facts(subject, predicate=predicate, as_of=when, known_at=known, everything=all)
    render.facts(json, result)


@app.command()
def search(
    text: Annotated[str, typer.Argument(help="Text to find in ids, names, aliases and weak aliases.")],
    kb: KbOption = None,
    json: JsonOption = False,
):
    """Find entities by a part of their id, name, alias or weak alias, ignoring case."""
    with _kb(kb).reading() as session:
        hits = session.search(text)
    render.search(json, text, hits)


@app.command()
def neighbors(
    entity: Annotated[str, typer.Argument(help="An entity id, name or alias.")],
    hops: Annotated[int, typer.Option(help="How many facts away (1 to 4).")] = 1,
    kb: KbOption = None,
    json: JsonOption = False,
):
    """The entities within N current facts of an entity, and the facts that link them."""
    with _kb(kb).reading() as session:
        result = session.neighbors(entity, hops)
    render.neighbors(json, result)


@app.command()
def history(
    fact_id: Annotated[str, typer.Argument(metavar="FACT_ID", help="The fact id.")],
    kb: KbOption = None,
    json: JsonOption = False,
):
    """A fact and every change to it, with what each field held before."""
    with _kb(kb).reading() as session:
        result = session.history(fact_id)
    render.history(json, result)


@app.command()
def sparql(
    query: Annotated[str, typer.Argument(metavar="QUERY_OR_FILE", help="A SPARQL query, or the path of a .rq file.")],
    kb: KbOption = None,
    json: JsonOption = False,
):
    """Run any SPARQL query over the knowledge base (facts are named graphs; see README)."""
    from kgrdf.errors import BadInput

    path = Path(query)
    if query.endswith(".rq") or (len(query) < 4096 and "\n" not in query and path.is_file()):
        try:
            query = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"cannot read {path}: {exc.strerror}") from None
    with _kb(kb).reading() as session:
        result = session.sparql(query)
        render.sparql(json, result)


@app.command()
def export(
    format: Annotated[str, typer.Option("--format", "-f", help="trig, nquads or jsonld (the whole dataset), or turtle (current facts as one graph).")] = "trig",
    output: Annotated[Optional[Path], typer.Option("--output", help="Write to this file instead of stdout.")] = None,
    kb: KbOption = None,
    json: JsonOption = False,
):
    """Write the knowledge base in a standard RDF syntax that other RDF tools read back."""
    with _kb(kb).reading() as session:
        data = session.export(format)
    if output:
        from kgrdf.errors import BadInput

        try:
            output.write_bytes(data)
        except OSError as exc:
            raise BadInput(f"cannot write {output}: {exc.strerror}") from None
        render.out(json, {"output": str(output), "format": format, "bytes": len(data)},
                   f"wrote {len(data)} bytes of {format} to {output}")
    elif json:
        render.out(True, {"format": format, "data": data.decode("utf-8")}, "")
    else:
        sys.stdout.buffer.write(data)


@app.command()
def stats(kb: KbOption = None, json: JsonOption = False):
    """How much the knowledge base holds: entities by type, facts by status."""
    with _kb(kb).reading() as session:
        result = session.stats()
    render.stats(json, result)


@app.command()
def validate(kb: KbOption = None, json: JsonOption = False):
    """Check the whole knowledge base: every fact and entity against the SHACL shapes, and the store
    itself (journal position, index equal to a rebuild, torn tail, files edited outside kgrdf).

    Exits 0 when clean (warnings allowed), 1 with violations, 3 when the store is damaged.
    """
    progress = None
    if sys.stderr.isatty() and not json:
        def progress(facts):
            print(f"checking {facts} facts against the shapes ...", file=sys.stderr)
    report = _kb(kb).validate(progress=progress)
    render.validation(json, report)
    if report["damage"]:
        raise typer.Exit(3)
    if any(f["severity"] == "violation" for f in report["findings"]):
        raise typer.Exit(1)


schema_app = typer.Typer(cls=_Commands, help="The effective schema, and checks of a site's schema extension.",
                         no_args_is_help=False, add_completion=False, pretty_exceptions_enable=False,
                         rich_markup_mode=None)
app.add_typer(schema_app, name="schema")


@schema_app.callback(invoke_without_command=True)
def schema(
    ctx: typer.Context,
    format: Annotated[str, typer.Option("--format", "-f", help="text, or turtle (the effective ontology).")] = "text",
    kb: KbOption = None,
    json: JsonOption = False,
):
    """The effective schema: entity types and predicates with their axis, markers and reviewer
    sentences, the core ontology plus the knowledge base's schema.json when it is accepted."""
    from kgrdf import schema as schema_module
    from kgrdf.errors import BadInput

    if ctx.invoked_subcommand:
        return
    if format not in ("text", "turtle"):
        raise BadInput(f"unknown schema format {format!r}; use text or turtle")
    base = _kb(kb)
    with base.reading() as session:
        effective, quads = session.schema, session.backend.schema_quads()
    extension = None
    if (base.path / "schema.json").is_file():
        from kgrdf import extension as extension_module

        ext = extension_module.check_file(base.path / "schema.json")
        extension = {"accepted": ext.accepted, "problems": ext.problems}
    if format == "turtle":
        import pyoxigraph as ox

        triples = [ox.Triple(q.subject, q.predicate, q.object) for q in quads]
        sys.stdout.buffer.write(ox.serialize(triples, format=ox.RdfFormat.TURTLE, prefixes=schema_module_prefixes()))
        return
    render.schema(json, effective, extension)


def schema_module_prefixes() -> dict:
    from kgrdf import vocab

    return {**vocab.PREFIXES, "site": "https://kgrdf.org/ns/site#"}


@schema_app.command("check")
def schema_check(
    file: Annotated[Path, typer.Argument(help="A schema.json to check, without installing it.")],
    json: JsonOption = False,
):
    """Check a site schema extension without installing it: its OWL RL closure with the core ontology
    against the shapes for schemas. Exits 1 when it would be refused."""
    from kgrdf import extension

    ext = extension.check_file(file)
    render.out(json, {"file": str(file), "accepted": ext.accepted, "problems": ext.problems},
               f"{file}: accepted" if ext.accepted else f"{file}: refused\n" + "\n".join(f"  {p}" for p in ext.problems))
    if not ext.accepted:
        raise typer.Exit(1)


@app.command()
def demo(
    kb: Annotated[Optional[Path], typer.Option("--kb", help="Load the example into this folder (default: a temporary one).")] = None,
    json: JsonOption = False,
):
    """Load the example organization and show a lookup, a two-hop question and a fact's history."""
    from kgrdf import demo as demo_module

    demo_module.run(kb, json)


def main() -> None:
    """The entry point of ``kg`` and ``python -m kgrdf``."""
    app()
