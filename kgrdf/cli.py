"""The ``kg`` command: parse the arguments, make one library call, render (§6, §7).

Every command takes ``--kb`` (else KGRDF_HOME, else the user data folder) and ``--json``. Exit
codes: 0 done, 1 refused, 2 bad usage or input, 3 damaged or locked. Expected errors print one line
on stderr (and, with --json, one JSON document on stdout); never a traceback.
"""

import io
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup
from typer.exceptions import TyperException

from kgrdf import pasted, render
from kgrdf.errors import KgError, Unanswered
from kgrdf.errors import of as errors_of


class _Commands(TyperGroup):
    """Turns the errors we expect into one line (or one JSON document) and their exit code; an
    error of the file system is one line naming the file (exit 3), an answer that standard output
    does not take one line saying so (exit 2; see _Answer), and any other error a bug reported in
    one line (exit 3), its traceback only with KGRDF_DEBUG=1."""

    def make_context(self, info_name, args, parent=None, **extra):
        """The context of kg itself: a usage error in kg's own arguments (kg --bogus) is one line,
        and with --json a JSON document too, as a command's are (invoke)."""
        arguments = list(args)
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except TyperException as exc:
            error = _usage_error(exc, info_name or "kg") if parent is None else None
            if error is None:
                raise
        except OSError as exc:  # kg -h, kg --version: their answer not taken (> /dev/full)
            if parent is not None:
                raise  # (a group's: kg's own invoke says it, as for any command)
            _drop_answer()
            if isinstance(exc, BrokenPipeError):  # a reader that went away (kg -h | head): quiet
                raise SystemExit(PIPE_GONE) from None
            error = Unanswered.of(exc)
            arguments = []  # (said on stderr alone)
        render.error(error, _asks_json(arguments))
        raise typer.Exit(error.exit_code)

    def invoke(self, ctx):
        if ctx.parent is not None:  # a group's command (kg batch apply): kg's own invoke answers
            return self._invoke(ctx)
        answer = ctx.meta[_ANSWER] = _Answer.over_stdout()
        pasted.here(())  # (until this command opens its knowledge base)
        try:
            return self._invoke(ctx)
        finally:
            if answer is not None:
                answer.close_over_stdout()

    def _invoke(self, ctx):
        # The command's name and what follows it (typer's click keeps the name apart, as _protected_args).
        arguments = [*getattr(ctx, "protected_args", getattr(ctx, "_protected_args", [])), *ctx.args]
        as_json = _asks_json(arguments) or bool(ctx.params.get("json"))
        answer = ctx.meta.get(_ANSWER)
        try:
            if ctx.parent is None:
                _check_arguments(arguments)
            try:
                done = super().invoke(ctx)
            except (typer.Exit, typer.Abort):
                _answered(ctx)  # (lint, validate: an answer, then their exit code)
                if answer is not None and answer.failed is not None and not ctx.meta.get(_SAID):
                    raise answer.failed from None  # (kg lookup --help > /dev/full: not taken, exit 2)
                raise
            _answered(ctx)
            return done
        except (typer.Exit, typer.Abort):
            raise  # typer's own exits
        except Exception as exc:
            if answer is not None and answer.failed is not None:
                error = _unanswered(answer)  # whatever the failed write led to
            elif isinstance(exc, BrokenPipeError):  # a reader that went away (kg export | head): quiet
                raise SystemExit(PIPE_GONE) from None
            else:
                error = _error_of(exc, ctx, arguments)
                if error is None:
                    raise
        if isinstance(error, Unanswered):
            as_json = False  # the answer's own output failed: never written to again
        ctx.meta[_SAID] = True  # (a group's command said it: kg's own invoke says nothing more)
        try:
            render.error(error, as_json)
            _answered(ctx)
        except OSError:
            pass  # the line on stderr is said (or nothing can be); the exit code says the rest
        ctx.exit(error.exit_code)


def _asks_json(arguments: list[str]) -> bool:
    """Whether the command line asks for JSON: --json among its options, not after ``--`` (kg
    lookup -- --json looks up an entity of that name)."""
    return "--json" in (arguments[: arguments.index("--")] if "--" in arguments else arguments)


_ANSWER = "kgrdf.answer"  # (in ctx.meta, which every context of one kg command shares)
PIPE_GONE = 141  # the exit of a read whose reader went away: as the pipe's signal (128 + SIGPIPE) ends others
_SAID = "kgrdf.said"  # (in ctx.meta: the command's error was said)
FORGET_SHOWN = 20  # facts a dry run of kg forget lists (--json lists them all)


class _Answer(io.FileIO):
    """Standard output as kg writes its answer to it, which remembers the first write that failed
    (``failed``: a full disk, /dev/full, a reader that went away) and takes, to drop them, all the
    writes after: the answer is lost, and saying so again on the output that failed, or at exit as
    Python's last flush does, would only bury the one line that says so on stderr."""

    failed: OSError | None = None
    _before = None

    @classmethod
    def over_stdout(cls) -> "_Answer | None":
        """Make sys.stdout write through a new _Answer, buffered as it was; None when sys.stdout is
        not the process's own (a test's runner, which takes every write)."""
        before = sys.stdout
        if before is None or before is not sys.__stdout__:
            return None
        try:
            before.flush()
            answer = cls(before.fileno(), "wb", closefd=False)
        except (OSError, ValueError):
            return None
        answer._before = before
        binary = io.BufferedWriter(answer) if isinstance(before.buffer, io.BufferedWriter) else answer
        sys.stdout = io.TextIOWrapper(
            binary,
            encoding=before.encoding,
            errors=before.errors,
            line_buffering=before.line_buffering,
            write_through=before.write_through,
        )
        return answer

    def close_over_stdout(self) -> None:
        """Give sys.stdout back as it was, once what is buffered is written (or dropped)."""
        try:
            sys.stdout.flush()
        except OSError:
            pass  # (kept in failed: the command's answer said so already, or its reader went away)
        sys.stdout = self._before

    def write(self, data) -> int:
        if self.failed is not None:
            return len(data)
        try:
            return super().write(data)
        except OSError as exc:
            self.failed = exc
            raise


def _first_leaf(group: BaseExceptionGroup) -> BaseException:
    while isinstance(group, BaseExceptionGroup):
        group = group.exceptions[0]
    return group


def _drop_answer() -> None:
    """Send what standard output still holds nowhere: its last flush, at exit, would fail again."""
    try:
        nowhere = os.open(os.devnull, os.O_WRONLY)
        os.dup2(nowhere, 1)
        os.close(nowhere)
    except OSError:
        pass


def _standard_streams() -> None:
    """A standard stream closed when kg starts (kg >&-) is opened on /dev/null before anything
    else, so that no file kgrdf opens takes its number (a write meant for it, or for git's output,
    would land in that file). Standard output so opened takes no write: the answer is not taken, as
    by a full disk, said on stderr, with what was made all the same. Standard error so opened says
    nothing: the exit code does."""
    closed = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.append(fd)
            os.open(os.devnull, os.O_RDONLY if fd == 1 else os.O_RDWR)  # (takes the lowest number free: fd)
    if 0 in closed or sys.stdin is None:  # (reads as empty)
        sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "rb", closefd=False)))
    if 1 in closed or sys.stdout is None:
        sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "wb", closefd=False)))
    if 2 in closed or sys.stderr is None:
        sys.stderr = sys.__stderr__ = io.TextIOWrapper(io.FileIO(2, "wb", closefd=False), write_through=True)
    # A locale whose encoding cannot write every character (ISO-8859-1): a name in Greek or an emoji
    # is written escaped (\u039a), as standard error writes it, where it failed the answer after
    # the command's write was made.
    if not render.takes_all_text(sys.stdout) and isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")


def _answered(ctx) -> None:
    """Write out what the answer still holds in its buffer (kg's own invoke): a failure is then the
    command's, not an exception at exit after the command said it was done."""
    if ctx.parent is None and ctx.meta.get(_ANSWER) is not None:
        sys.stdout.flush()


def _unanswered(answer: _Answer) -> KgError:
    """The error of an answer that standard output did not take, saying what the command made all
    the same (kgrdf.made): a program told nothing of it would make it again. A reader that went away
    from a command that made nothing (kg export | head) is left quiet, as it always was."""
    from kgrdf import made

    done = made.notes()
    if not done and isinstance(answer.failed, BrokenPipeError):
        raise SystemExit(PIPE_GONE)
    return Unanswered.of(answer.failed, done)


def _error_of(exc: Exception, ctx, arguments: list[str]) -> KgError | None:
    """The error a command's exception is for the user (None: typer's own, to raise as it is)."""
    if isinstance(exc, TyperException):
        name = arguments[0] if arguments else ""
        known = bool(name) and not name.startswith("-") and ctx.command.get_command(ctx, name) is not None
        return _usage_error(exc, f"{ctx.command_path} {name}" if known else ctx.command_path)
    if not isinstance(exc, KgError | OSError) and os.environ.get("KGRDF_DEBUG"):
        import traceback

        traceback.print_exc()
    return errors_of(exc)


def _usage_error(exc, command_path: str) -> KgError | None:
    """A usage error of typer's (a missing argument, an option that is not there, a value that is
    not a number) as one line (exit 2) with the way to the usage of the command it is about
    (``command_path`` when the error does not say); None for anything else (the help that kg, or a
    group given no command, shows)."""
    from kgrdf.errors import BadInput

    message = exc.format_message() if getattr(exc, "exit_code", None) == 2 and hasattr(exc, "format_message") else ""
    if not message or "\n" in message.strip():
        return None
    context = getattr(exc, "ctx", None)
    return BadInput(
        message.strip().rstrip("."), hint=f"{context.command_path if context else command_path} -h shows the usage"
    )


def _check_arguments(arguments: list[str]) -> None:
    """Every argument is UTF-8 text (a byte that is not becomes a lone surrogate, which nothing can
    store or print) without NUL (which no real command line holds, and no path). Raises BadInput
    before any command runs. Sizes are the library's to bound (KGRDF_MAX_TEXT for a value, the
    sandbox's for a query); the system bounds an argument anyway."""
    from kgrdf.errors import BadInput

    for number, argument in enumerate(arguments):
        before = arguments[number - 1] if number else ""
        named = (
            f"the value of {before}"
            if before.startswith("-") and not argument.startswith("-")
            else (f"argument {number + 1}")
        )
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise BadInput(
                f"{named} {argument[:40]!r} is not UTF-8 text ({argument[exc.start]!r} at character {exc.start + 1})",
                hint="a byte that is not UTF-8 was given; pass the text in UTF-8",
            ) from None
        if "\x00" in argument:
            raise BadInput(f"{named} {argument[:40]!r} holds U+0000 (NUL), which no command line can")


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


def _version(shown: bool) -> None:
    if shown:
        from kgrdf import __version__

        print(f"kg (kgrdf) {__version__}", flush=True)  # (not taken: _Commands.make_context says so)
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print kg's version and exit."),
    ] = False,
):
    """kgrdf: the working facts of an organization, with sources, two timelines and review, on RDF."""


def _tilde(path: Path | None) -> Path | None:
    """A --kb path with ~ read as a shell reads it (a quoted '~/kb' made a folder named ~)."""
    return Path(os.path.expanduser(path)) if path is not None and str(path).startswith("~") else path


KbOption = Annotated[
    Path | None,
    typer.Option(
        "--kb",
        help="The knowledge base folder. Default: $KGRDF_HOME, else $XDG_DATA_HOME/kgrdf, else ~/.local/share/kgrdf.",
        show_default=False,
        callback=_tilde,
    ),
]
PerspectiveOption = Annotated[
    str | None,
    typer.Option(
        "--perspective",
        envvar="KGRDF_PERSPECTIVE",
        show_envvar=True,
        help="Whose knowledge: the command sees and writes this perspective only. Default: the knowledge base's.",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document for programs.")]
SourceOption = Annotated[
    list[str] | None,
    typer.Option(
        "--source",
        "-s",
        help="Where it came from, KIND:REF (repeat). Kinds: user, ledger, report, "
        "memory, transcript, profile (trusted); slack, pr, ticket, doc, chat (untrusted).",
    ),
]
AllowForgotten = Annotated[
    bool, typer.Option("--allow-forgotten", help="Add a person who was forgotten with kg forget again, knowingly.")
]
ObjectOption = Annotated[str | None, typer.Option("--object", "-o", help="The object: an entity id, name or alias.")]
ValueOption = Annotated[
    str | None, typer.Option("--value", "-v", help="The value: text (or a date for dated predicates).")
]
AudienceOption = Annotated[
    str | None,
    typer.Option(
        "--audience",
        help="Who could hear it: public, workspace:W, channel:C, dm:A,B or owner (the default: "
        "the knowledge base owner's own).",
    ),
]
HearOption = Annotated[
    str | None,
    typer.Option(
        "--audience",
        help="The audience the answer will be shown in (public, workspace:W, channel:C, dm:A,B): only "
        "what it may hear is read. Default: the owner, who may hear everything.",
    ),
]
ReasonOption = Annotated[
    str | None,
    typer.Option(
        "--reason", help="Why, kept in the fact's history, which every audience that may hear the fact is shown."
    ),
]


def _group(name: str, help: str, no_args_is_help: bool = False) -> typer.Typer:
    """A command group (kg schema, kg batch, kg identifiers) with the same error handling as kg."""
    group = typer.Typer(
        cls=_Commands,
        help=help,
        no_args_is_help=no_args_is_help,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.add_typer(group, name=name)
    return group


def _kb(path: Path | None, perspective: str | None = None, backend: str = "oxigraph", face: bool = False):
    """The knowledge base at ``path``; on a terminal, it tells each step of a long piece of work on
    stderr (an index rebuilt, a person forgotten), which would otherwise run for minutes unheard.
    The commands its hints print name it, but for a ``face`` (kg serve, kg console, kg mcp): their
    answers go to programs and pages, which are never to learn where the knowledge base lives."""
    from kgrdf.kb import KnowledgeBase, default_home

    base = KnowledgeBase.open(path or default_home(), backend=backend, perspective=perspective)
    if sys.stderr.isatty():
        base.notice = _tell
    base.perspective_asked = perspective is not None  # (a typo is refused, not read as an empty perspective)
    pasted.here(() if face else base.command_words())
    return base


def _tell(text: str) -> None:
    print(f"kg: {text}", file=sys.stderr, flush=True)


@contextmanager
def _reading(kb: Path | None, perspective: str | None, audience: str | None = None):
    """A read of one perspective, for the audience the answer will be shown in (None: the owner)."""
    with _kb(kb, perspective).reading() as session:
        session.hear_as(audience)
        yield session


def _write_fact(base, command: str, as_json: bool, change) -> None:
    """Run one fact-changing library call in a write, then render the fact it leaves and any warning."""
    with base.writing(command) as writer:
        outcome = change(writer)
        shown = writer.describe(outcome.fact)
    render.outcome(as_json, outcome, shown, writer.warnings)


def _time(text: str | None, what: str):
    from kgrdf import clock

    return clock.parse_optional(text, what)  # an empty --as-of is refused, never read as "not given"


# --- writing --------------------------------------------------------------------------------------


@app.command()
def init(
    kb: KbOption = None,
    perspective: Annotated[
        str, typer.Option(help="The knowledge base's default perspective (whose knowledge).")
    ] = "main",
    index: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="Keep the index on this SPARQL 1.1 server instead of on disk: an Oxigraph server's address "
            "(http://HOST:PORT), or a query endpoint ending in /query (updates go to /update beside it) or "
            "/sparql (both go there). The server must answer and hold no other knowledge base's index.",
        ),
    ] = None,
    json: JsonOption = False,
):
    """Make a new, empty knowledge base (a folder with a journal, an index and a git history).

    With --index URL the index lives on a SPARQL server (kg status shows where it stands); the
    journal, the source of truth, stays in the folder.
    """
    from kgrdf.kb import KnowledgeBase, default_home

    base = KnowledgeBase.create(kb or default_home(), perspective=perspective, index=index)
    where = f"; its index on {base.index_url}" if base.index_url else ""
    render.out(
        json,
        {"kb": str(base.path), "perspective": base.perspective, "replica": base.replica, "index": base.index_url},
        f"made a knowledge base at {base.path} (perspective {base.perspective}){where}",
    )


@app.command("add-entity")
def add_entity(
    entity_id: Annotated[
        str, typer.Argument(metavar="ID", help="TYPE/NAME in lower case, e.g. person/dana, repo/web-app.")
    ],
    name: Annotated[str, typer.Option("--name", "-n", help="The entity's name (skos:prefLabel).")],
    alias: Annotated[
        list[str] | None, typer.Option("--alias", "-a", help="A strong alias: a true synonym (repeat).")
    ] = None,
    weak_alias: Annotated[
        list[str] | None,
        typer.Option("--weak-alias", help="A weak alias: a related term, searchable, never an identity (repeat)."),
    ] = None,
    summary: Annotated[str | None, typer.Option(help="A short description (never for a person).")] = None,
    allow_forgotten: AllowForgotten = False,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Add an entity, or add names to one: a new name or summary replaces the old, aliases add up."""
    base = _kb(kb, perspective)
    with base.writing("add-entity") as writer:
        writer.allow_forgotten = allow_forgotten
        entity, outcome = writer.add_entity(entity_id, name, alias or [], weak_alias or [], summary)
    render.out(json, {**entity.as_json(), "outcome": outcome}, f"{outcome} {entity.id} ({entity.name})")


@app.command()
def identify(
    name: Annotated[str, typer.Argument(help="A name, alias or id.")],
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Which entity a name means: by id, name or strong alias. Weak aliases only suggest.

    Exits 1 when nothing matches or the name is ambiguous.
    """
    with _kb(kb, perspective).reading() as session:
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
    valid_from: Annotated[str | None, typer.Option(help="When it became true (YYYY-MM-DD or ISO time).")] = None,
    valid_to: Annotated[str | None, typer.Option(help="When it stopped being true.")] = None,
    order: Annotated[int | None, typer.Option(help="Place in a sequence, for has_step.")] = None,
    prevents_rework: Annotated[
        bool, typer.Option("--prevents-rework", help="Not knowing it once caused rework.")
    ] = False,
    from_user: Annotated[
        bool,
        typer.Option(
            "--from-user", help="The user said it: give their words with --quote and the session with --transcript."
        ),
    ] = False,
    quote: Annotated[str | None, typer.Option(help="The user's own words (with --from-user).")] = None,
    transcript: Annotated[
        Path | None,
        typer.Option(
            help="The agent session's transcript, JSON lines (with "
            "--from-user): the quote must be in a user prompt there."
        ),
    ] = None,
    reason: ReasonOption = None,
    audience: AudienceOption = None,
    said_by: Annotated[
        str | None,
        typer.Option(
            "--said-by",
            help="Who said it: an actor or a person (id, name or alias). Their organization then is recorded with it.",
        ),
    ] = None,
    message: Annotated[str | None, typer.Option(help="The message it was said in (a permalink or an id).")] = None,
    extracted: Annotated[
        bool, typer.Option("--extracted", help="A model read it out of text: it stays a proposal whatever its sources.")
    ] = False,
    confidence: Annotated[
        float | None, typer.Option(help="The extractor's confidence, 0 to 1 (with --extracted).")
    ] = None,
    span: Annotated[str | None, typer.Option(help="The words it was extracted from (with --extracted).")] = None,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Propose a fact. Proposing a known fact again observes it again (a --valid-from, --valid-to or
    --order it does not hold is refused: kg supersede corrects them); a rejected one stays rejected.

    The auto-confirm rules then apply: the user's words with the quote found in a genuine user
    prompt of the transcript (--from-user); two trusted sources of different kinds for a low-risk
    fact naming no person; a profile source for a person's title or timezone. Anything else stays
    proposed for the daily batch (kg batch), and the output says why.
    """
    from kgrdf import transcript as transcript_module
    from kgrdf.errors import BadInput
    from kgrdf.writer import Heard

    user_words = None
    if from_user:
        user_words = transcript_module.user_words(quote, transcript)
    elif quote or transcript:
        raise BadInput("--quote and --transcript go with --from-user")
    _write_fact(
        _kb(kb, perspective),
        "propose",
        json,
        lambda writer: writer.propose(
            subject,
            predicate,
            object=object,
            value=value,
            sources=source or [],
            authority=authority,
            valid_from=valid_from,
            valid_to=valid_to,
            order=order,
            prevents_rework=prevents_rework,
            reason=reason,
            user_words=user_words,
            heard=Heard("owner" if audience is None else audience, said_by, message, extracted, confidence, span),
        ),
    )


@app.command()
def confirm(
    fact_id: Annotated[str, typer.Argument(metavar="ID", help="The fact id, e.g. f-3k9x2a.")],
    reason: ReasonOption = None,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Confirm a fact. For a single-valued predicate this closes the confirmed value it replaces."""
    _write_fact(_kb(kb, perspective), "confirm", json, lambda writer: writer.confirm(fact_id, reason=reason))


@app.command()
def reject(
    fact_id: Annotated[str, typer.Argument(metavar="ID", help="The fact id.")],
    reason: ReasonOption = None,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Reject a fact: it leaves current reads and stays rejected if proposed again."""
    _write_fact(_kb(kb, perspective), "reject", json, lambda writer: writer.reject(fact_id, reason=reason))


@app.command()
def disclose(
    facts: Annotated[list[str], typer.Argument(metavar="FACT...", help="The ids of the facts the reply used.")],
    message: Annotated[str, typer.Option("--message", help="The reply they were told in: a permalink or an id.")],
    audience: Annotated[
        str,
        typer.Option("--audience", help="Who the reply went to: public, workspace:W, channel:C, dm:A,B or owner."),
    ],
    by: Annotated[
        str, typer.Option("--by", help="Who told it: a name kept with the record. Default: owner.")
    ] = "owner",
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Record that a reply told these facts to an audience (a disclosure of each, kept in the fact's
    provenance). A fact that audience may not hear (none of its hearings may be heard there) is
    refused, and nothing is written; kg disclosures and kg told read them back."""
    from kgrdf import disclosure

    with _kb(kb, perspective).writing("disclose") as writer:
        result = disclosure.record(writer, message, audience, facts, by)
    render.disclosed(json, result)


@app.command()
def supersede(
    fact_id: Annotated[str, typer.Argument(metavar="ID", help="The current fact to correct.")],
    object: ObjectOption = None,
    value: ValueOption = None,
    source: SourceOption = None,
    valid_from: Annotated[
        str | None,
        typer.Option(
            help="When the new value became true (default: now); the "
            "old one holds until then. Without a new value: the fact's "
            "corrected start."
        ),
    ] = None,
    valid_to: Annotated[
        str | None,
        typer.Option(help="When the new value stopped being true (without a new value: the fact's corrected end)."),
    ] = None,
    order: Annotated[
        int | None,
        typer.Option(help="The place in a sequence, for has_step (without a new value: the fact's corrected place)."),
    ] = None,
    reason: ReasonOption = None,
    audience: Annotated[
        str | None,
        typer.Option(
            "--audience", help="Who could hear the correction. Default: the audience of the fact it corrects."
        ),
    ] = None,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Correct a fact: record the new object or value, confirmed, and close the old one (kept in
    history); a new value that begins later (--valid-from after now) leaves the old one true until
    then. The old one's --order and prevents_rework carry over. Without --object or --value,
    correct the fact's own valid time or order in place."""
    _write_fact(
        _kb(kb, perspective),
        "supersede",
        json,
        lambda writer: writer.supersede(
            fact_id,
            object=object,
            value=value,
            sources=source or [],
            valid_from=valid_from,
            valid_to=valid_to,
            order=order,
            reason=reason,
            audience=audience,
        ),
    )


@app.command("import")
def import_(
    file: Annotated[
        Path,
        typer.Argument(
            help='JSON (an array) or JSON lines of {"type": "entity", ...} and {"type": "fact", ...} records.'
        ),
    ],
    apply: Annotated[
        bool,
        typer.Option(
            "--apply", help="Write the import. Without it, a dry run: the same checks and counts, nothing written."
        ),
    ] = False,
    auto_confirm: Annotated[
        bool,
        typer.Option(
            "--auto-confirm",
            help="Apply the auto-confirm rules (two trusted "
            "sources, profile fields). Without it every fact is a proposal.",
        ),
    ] = False,
    allow_forgotten: AllowForgotten = False,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Import entities and facts in one transaction, checked as kg add-entity and kg propose check
    them. Refused records are counted by reason (whitelist, schema, unresolved, malformed,
    forgotten, conflict) and left out; the rest go in. A fact may name an entity that a later record
    makes. Fields are read strictly: a string where a
    list goes is refused; "true"/"false" and digits are read as true, false and numbers. Says how
    many daily batches the proposals take."""
    from kgrdf import importer

    report = importer.run(
        _kb(kb, perspective),
        file,
        apply=apply,
        auto_confirm=auto_confirm,
        progress=_progress("records"),
        allow_forgotten=allow_forgotten,
    )
    render.import_report(json, report.as_json(), str(file), apply)


class _Progress:
    """A progress bar on a terminal's stderr: called with (done, total); ``note`` says what comes next."""

    def __init__(self, what: str):
        self.what = what

    def __call__(self, done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        end = "\n" if done >= total else ""
        print(
            f"\r  [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {self.what}",
            end=end,
            file=sys.stderr,
            flush=True,
        )

    def note(self, text: str) -> None:
        print(f"  {text}", file=sys.stderr, flush=True)


def _progress(what: str):
    """A progress bar when stderr is a terminal; nothing when it is piped or captured."""
    return _Progress(what) if sys.stderr.isatty() else None


batch_app = _group("batch", "Today's review batch, and the one-line answer to it.")


@batch_app.callback(invoke_without_command=True)
def batch(
    ctx: typer.Context,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Print today's review batch and save it (batch.json; batch-PERSPECTIVE.json for another perspective) for kg batch apply.

    Proposals are grouped by what they are about (a step under its process, a lesson under what it
    is about, reviews/owns/approves under the area); small groups fold into one per axis; parts of
    at most 8 facts are lettered; at most 10 groups and 40 facts (KGRDF_BATCH_GROUPS,
    KGRDF_GROUP_FACTS, KGRDF_BATCH_FACTS), what prevents rework first. Proposals not observed
    again for 30 days expire first.
    """
    from kgrdf import batch as batch_module

    if ctx.invoked_subcommand:  # (kg batch --kb K apply ...: the answer goes where the batch came from)
        ctx.obj = {"kb": kb, "perspective": perspective, "json": json}
        return
    render.batch(json, batch_module.today(_kb(kb, perspective)))


@batch_app.command("apply")
def batch_apply(
    ctx: typer.Context,
    decision: Annotated[
        str,
        typer.Argument(
            help='One line, e.g. "confirm all except 2b, reject 3a": confirm, '
            "reject, skip or except, then all, a group (2) or a fact (2b); "
            "later clauses win; skip and except leave facts proposed."
        ),
    ],
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Answer the batch kg batch printed last. A decision that does not parse changes nothing and
    says where it went wrong; one that does is applied whole, in one transaction. One that only
    skips decides nothing: the batch stays open to answer."""
    from kgrdf import batch as batch_module

    given = ctx.obj or {}  # options given before apply (kg batch --kb K apply): its own win
    kb, perspective = kb or given.get("kb"), perspective or given.get("perspective")
    json = json or given.get("json", False)
    result = batch_module.apply(_kb(kb, perspective), decision)
    changed = result["changed_since_printed"]
    render.out(
        json,
        result,
        f"confirmed {result['confirmed']}, rejected {result['rejected']}, "
        f"left {result['left_proposed']} proposed"
        + (
            f"; {len(changed)} changed since the batch was printed, left as they are: {', '.join(changed)}"
            if changed
            else ""
        )
        + (f"; {result['note']}" if result.get("note") else ""),
    )


identifiers_app = _group(
    "identifiers",
    "People's chat ids, tracker accounts and code-host logins (identifiers.jsonl, "
    "mode 0600; never in a pack, an export, a search or kg sparql).",
    no_args_is_help=True,
)


@identifiers_app.command("add")
def identifiers_add(
    entity: Annotated[str, typer.Argument(help="A person or actor: id, name or alias.")],
    kind: Annotated[str, typer.Argument(help="chat (a member id), tracker (an account) or code-host (a login).")],
    value: Annotated[str, typer.Argument(help="The identifier, e.g. U024BE7LH or sam-reyes.")],
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Record one of a person's identifiers, for routing and mentions. Kept apart from the facts."""
    from kgrdf import identifiers

    base = _kb(kb, perspective)
    with base.writing("identifiers") as writer:
        entry, outcome = identifiers.add(base, writer, entity, kind, value)
    render.out(json, {**entry, "outcome": outcome}, f"{outcome} the {entry['kind']} identifier of {entry['entity']}")


@identifiers_app.command("list")
def identifiers_list(
    entity: Annotated[str | None, typer.Argument(help="Only this person or actor.")] = None,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """The identifiers recorded, by person. The one command that shows them."""
    from kgrdf import identifiers

    base = _kb(kb, perspective)
    with base.reading() as session:
        entries = identifiers.listed(base, session, entity)
    render.out(
        json,
        {"identifiers": entries},
        "\n".join(f"{e['entity']}  {e['kind']}  {e['value']}" for e in entries) or "no identifiers recorded",
    )


tokens_app = _group(
    "tokens",
    "Bearer tokens for programs that reach the knowledge base over HTTP (kg serve): each one "
    "binds a perspective, an audience and whether it may write. Kept hashed in tokens.json (mode "
    "0600; never in the index, the journal or git).",
    no_args_is_help=True,
)


@tokens_app.command("add")
def tokens_add(
    name: Annotated[str, typer.Argument(help="What the token is for, e.g. sales-bot (letters, digits, . _ -).")],
    perspective_of: Annotated[
        str, typer.Option("--perspective", help="Whose knowledge it reads and writes (kg perspectives lists them).")
    ],
    audience: Annotated[
        str,
        typer.Option(
            "--audience", help="Who will be shown what it reads: public, workspace:W, channel:C, dm:A,B or owner."
        ),
    ],
    write: Annotated[
        bool, typer.Option("--write", help="It may write (propose, confirm, ...); else it only reads.")
    ] = False,
    speaker: Annotated[
        str | None,
        typer.Option("--speaker", help="Who says the facts it proposes: an actor or a person of the perspective."),
    ] = None,
    kb: KbOption = None,
    json: JsonOption = False,
):
    """Make a token and print its secret, this once: kgrdf keeps only its digest. A request that
    carries it (Authorization: Bearer SECRET) reads as that perspective and audience, whatever it asks."""
    from kgrdf import tokens

    token, secret = tokens.add(_kb(kb, None), name, perspective_of, audience, write, speaker)
    render.out(
        json,
        {**token.as_json(), "secret": secret},
        f"{secret}\nthe token {token.name}: perspective {token.perspective}, audience {token.audience}, "
        f"{'reads and writes' if token.write else 'reads only'}. Keep the secret: it is not shown again.",
    )


@tokens_app.command("list")
def tokens_list(kb: KbOption = None, json: JsonOption = False):
    """The tokens, by name, with what each may do (never their secrets)."""
    from kgrdf import tokens

    base = _kb(kb, None)
    base.finish_deletion()  # (a forget cut short revokes the tokens of whom it forgets)
    found = [t.as_json() for t in tokens.listed(base.path)]
    render.out(
        json,
        {"tokens": found},
        "\n".join(
            f"{t['name']}  {t['perspective']}  {t['audience']}  {'write' if t['write'] else 'read'}  {t['created']}"
            for t in found
        )
        or "no tokens (kg tokens add makes one)",
    )


@tokens_app.command("revoke")
def tokens_revoke(
    name: Annotated[str, typer.Argument(help="The token's name (kg tokens list shows them).")],
    kb: KbOption = None,
    json: JsonOption = False,
):
    """Revoke a token: from now on its secret opens nothing."""
    from kgrdf import tokens

    gone = tokens.revoke(_kb(kb, None).path, name)
    render.out(json, {"revoked": gone.as_json()}, f"revoked the token {gone.name}")


@app.command()
def serve(
    host: Annotated[
        str, typer.Option(help="The address to listen on. Anything but loopback sends tokens in clear.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="The port to listen on; 0 picks a free one.")] = 8765,
    transcripts: Annotated[
        list[Path] | None,
        typer.Option(
            "--transcripts",
            help="A folder of agent sessions (repeat): a token that may write quotes the user's words from a "
            "transcript in one of them (propose_from_user, confirm, reject). Without it, no transcript is read.",
        ),
    ] = None,
    kb: KbOption = None,
):
    """Serve the knowledge base to programs: MCP at /mcp (streamable HTTP), a read-only SPARQL 1.1
    endpoint at /sparql and the --json documents at /api/ROUTE. Every request carries a bearer
    token (kg tokens add), which alone decides its perspective, audience and right to write. A
    transcript a token names is read only in a --transcripts folder: a caller naming any file of
    the machine could read it out, one guessed quote at a time."""
    import uvicorn

    from kgrdf.resident import Resident
    from kgrdf.serve import http

    base = _kb(kb, None, face=True)
    if host not in ("127.0.0.1", "::1", "localhost"):
        print(
            f"kg: warning: listening on {host}: tokens cross the network in clear unless a TLS proxy stands in front",
            file=sys.stderr,
        )
    folders = tuple(transcripts or ())
    for folder in folders:
        if not folder.is_dir():
            from kgrdf.errors import BadInput

            raise BadInput(f"--transcripts {folder} is not a folder")
    listener = _listening(host, port)
    port = listener.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    resident = Resident(base.path)
    resident.listen()
    print(f"kg: serving {base.path} at http://{shown}:{port} (/mcp, /sparql, /api); Ctrl-C stops", file=sys.stderr)
    server = uvicorn.Server(uvicorn.Config(http.app(base.path, resident, folders), log_level="warning"))
    server.run(sockets=[listener])


@app.command()
def console(
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="The loopback port to listen on; 0 picks a free one.")
    ] = 0,
    no_open: Annotated[bool, typer.Option("--no-open", help="Print the address; do not open a browser.")] = False,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
):
    """Serve the console on loopback and open it in the browser: the Briefing, the Constellation
    and Raw data, entity, fact and search pages, and the review queue (j/k move, c/r/d decide);
    every page has a JSON twin at the same address with .json. The address printed holds a token of
    this start: whoever opens it is taken to be you, as whoever runs kg confirm is. Ctrl-C stops it."""
    from kgrdf.console import web

    base = _kb(kb, perspective, face=True)
    if base.perspective_asked:
        with base.reading():  # a typo in --perspective is refused here, not served as pages that all refuse
            pass

    def announce(url: str) -> None:
        print(url, flush=True)
        print(f"kg: the console of {base.path} is at the address above; Ctrl-C stops it", file=sys.stderr)

    web.run(base.path, port, perspective, not no_open, announce)


def _listening(host: str, port: int):
    """A socket bound to the address the server listens on (port 0: a free one), or, in one line,
    why it cannot be (before anything starts)."""
    import socket

    from kgrdf.errors import BadInput

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OverflowError) as exc:
        raise BadInput(f"--host {host} --port {port} is not an address to listen on ({exc})") from None
    family, kind, proto, _name, address = infos[0]
    listener = socket.socket(family, kind, proto)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(address)
    except OSError as exc:
        listener.close()
        raise BadInput(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}", hint="--port chooses another port"
        ) from None
    return listener


@app.command()
def mcp(
    audience: Annotated[
        str,
        typer.Option(
            "--audience", help="Who will be shown what it reads: public, workspace:W, channel:C, dm:A,B or owner."
        ),
    ],
    write: Annotated[bool, typer.Option("--write", help="It may write; else it only reads.")] = False,
    speaker: Annotated[
        str | None,
        typer.Option("--speaker", help="Who says the facts it proposes: an actor or a person of the perspective."),
    ] = None,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
):
    """MCP over standard input and output, for one local agent: the same tools as kg serve's /mcp,
    for the perspective and audience given here (never ones the agent asks for)."""
    from kgrdf import audience as audience_module
    from kgrdf import tokens
    from kgrdf.resident import Resident
    from kgrdf.serve import service, tools

    base = _kb(kb, perspective, face=True)
    if base.perspective_asked:
        with base.reading():  # a typo in --perspective is refused here, not served as an empty perspective
            pass
    said_by = tokens.speaker_of(base.path, base.perspective, speaker) if speaker else None
    heard_in = audience_module.parse(audience)
    named = tokens.people_named(base.path, base.perspective, [heard_in, said_by])
    before = tokens.forgets(base.path)
    caller = service.Caller(
        "stdio", base.perspective, heard_in, write, said_by, stdio=True, people=named, forgets=before
    )
    resident = Resident(base.path)
    resident.listen()
    try:
        tools.server(service.Service(base.path, resident), caller).run("stdio")
    except BaseExceptionGroup as group:  # (the SDK's tasks: its writer of the output failed)
        lost = group.subgroup(OSError)
        if lost is None:
            raise
        from kgrdf import made

        raise Unanswered.of(_first_leaf(lost), made.notes()) from None
    finally:
        resident.stop()


org_app = _group(
    "org",
    "Organizations: the perspective's own, and the ones it deals with, on the fact machinery.",
    no_args_is_help=True,
)


OrgAliasOption = Annotated[
    list[str] | None,
    typer.Option("--alias", "-a", help="Another name it goes by: a short name, a domain (texturehq.com) (repeat)."),
]
OrgIdOption = Annotated[str | None, typer.Option("--id", help="The id, organization/SLUG. Default: from the name.")]


@org_app.command("init")
def org_init(
    name: Annotated[str, typer.Argument(help='The organization this perspective belongs to, e.g. "Texture".')],
    alias: OrgAliasOption = None,
    org_id: OrgIdOption = None,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Provision the perspective's self organization: exactly one per perspective (a shape refuses
    a second), made by the operator and never from chat; every context pack opens with it."""

    base = _kb(kb, perspective)
    with base.writing("org init") as writer:
        entity, outcome = writer.add_organization(name, alias or [], org_id, is_self=True)
    render.out(
        json,
        {**entity.as_json(), "outcome": outcome, "perspective": base.perspective},
        f"{outcome} {entity.id} ({entity.name}) as the self organization of perspective {base.perspective}",
    )


@org_app.command("add")
def org_add(
    name: Annotated[str, typer.Argument(help='The organization\'s name, e.g. "Acme Corp".')],
    alias: OrgAliasOption = None,
    org_id: OrgIdOption = None,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Add an organization we deal with, or add aliases to one: a name an organization goes by
    already, as its name or an alias in any case, composed or not, is that organization, whose name
    stays. Its attributes are value facts (kg propose ORG founded --value 2023; industry,
    relationship, first_contact_at, last_contact_at) and its relations object facts (customer_of,
    vendor_of, parent_of)."""
    with _kb(kb, perspective).writing("org add") as writer:
        entity, outcome = writer.add_organization(name, alias or [], org_id)
    render.out(json, {**entity.as_json(), "outcome": outcome}, f"{outcome} {entity.id} ({entity.name})")


SaidByOption = Annotated[
    str | None,
    typer.Option(
        "--said-by", help="Who said it: an actor or a person (id, name or alias); their organization then is recorded."
    ),
]
MessageOption = Annotated[str | None, typer.Option(help="The message it was said in (a permalink or an id).")]


@org_app.command("set")
def org_set(
    org: Annotated[str, typer.Argument(help="The organization: an id, name or alias.")],
    key: Annotated[
        str,
        typer.Argument(
            help="founded, industry, relationship, first_contact_at, last_contact_at, a predicate "
            "schema.json adds for an organization's value, or any other key (a free-text attribute)."
        ),
    ],
    value: Annotated[str, typer.Argument(help="The value.")],
    source: SourceOption = None,
    audience: AudienceOption = None,
    said_by: SaidByOption = None,
    message: MessageOption = None,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Propose an attribute of an organization: a fact with a value, like any other. Two confirmed
    values of one attribute both stay, marked as conflicting, until a person runs kg supersede."""
    from kgrdf.writer import Heard

    _write_fact(
        _kb(kb, perspective),
        "org set",
        json,
        lambda writer: writer.set_attribute(
            org, key, value, sources=source or [], heard=Heard(audience or "owner", said_by, message)
        ),
    )


@org_app.command("affiliate")
def org_affiliate(
    org: Annotated[str, typer.Argument(help="The organization the person was said to belong to.")],
    claimed_name: Annotated[str, typer.Option("--claimed-name", help='The name that was said ("Jim").')],
    said_by: SaidByOption = None,
    role: Annotated[str | None, typer.Option(help='The role that was said ("IT").')] = None,
    message: MessageOption = None,
    source: SourceOption = None,
    audience: AudienceOption = None,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Record that someone said a person by this name works at an organization ("check with Jim,
    he's our IT guy"): an unverified claim with who said it and where. No actor is made; kg org
    promote links the claim to a real actor later, keeping the claim as evidence."""
    from kgrdf.writer import Heard

    _write_fact(
        _kb(kb, perspective),
        "org affiliate",
        json,
        lambda writer: writer.claim_member(
            org, claimed_name, role, sources=source or [], heard=Heard(audience or "owner", said_by, message)
        ),
    )


@org_app.command("promote")
def org_promote(
    claim: Annotated[str, typer.Argument(metavar="CLAIM", help="The claim's fact id (kg org affiliate printed it).")],
    actor: Annotated[str, typer.Argument(help="The real actor or person it was: an id, name or alias.")],
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Link an affiliation claim to a real actor: a confirmed "ACTOR is affiliated with ORG" whose
    source is the claim. The claim itself stays, unverified, as the evidence."""
    _write_fact(_kb(kb, perspective), "org promote", json, lambda writer: writer.promote_claim(claim, actor))


@org_app.command("merge")
def org_merge(
    keep: Annotated[str, typer.Argument(help="The organization to keep: an id, name or alias.")],
    merge: Annotated[str, typer.Argument(help="Its duplicate, merged into it.")],
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Make one organization of two duplicates: the second's current facts move to the first, each
    naming the fact it came from (whose own history stays), and what it had rejected stays rejected
    there; its name and aliases become the first's aliases, and its id resolves to the first from
    now on. The merge is recorded in both."""
    with _kb(kb, perspective).writing("org merge") as writer:
        result = writer.merge_organizations(keep, merge)
    also = [
        f"{len(result[key])} {what}"
        for key, what in (
            ("stayed_rejected", "it had rejected stayed rejected"),
            ("rejections", "rejected carried over"),
            ("revived", "it let expire proposed again"),
            ("retired", "between the two ended"),
        )
        if result[key]
    ]
    render.out(
        json,
        result,
        f"merged {result['merged']} into {result['kept']}: {len(result['moved'])} "
        f"fact{'' if len(result['moved']) == 1 else 's'} moved, "
        f"{len(result['observed'])} it knew already observed again"
        + "".join(f", {part}" for part in also)
        + f"; aliases: {', '.join(result['aliases'])}",
    )


@org_app.command("customers")
def org_customers(
    quiet_days: Annotated[
        int,
        typer.Option(
            "--quiet-days", help="Only customers not spoken to for this many days (no current last_contact_at since)."
        ),
    ] = 90,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    audience: HearOption = None,
    json: JsonOption = False,
):
    """Customers we have not spoken to in N days (customers-quiet.rq): organizations that are
    customers of the self organization, or whose relationship is customer."""
    with _reading(kb, perspective, audience) as session:
        result = session.quiet_customers(quiet_days)
    lines = [f"{c['id']}  {c['name']}  last contact {c['last_contact'] or 'never'}" for c in result["customers"]]
    render.out(json, result, "\n".join(lines) or f"every customer was spoken to in the last {quiet_days} days")


@org_app.command("of")
def org_of(
    actors: Annotated[list[str], typer.Argument(help="The actors of a conversation: ids, names or aliases.")],
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    audience: HearOption = None,
    json: JsonOption = False,
):
    """The organizations each actor is affiliated with now (actor-organizations.rq)."""
    with _reading(kb, perspective, audience) as session:
        result = session.organizations_of(actors)
    render.out(
        json,
        result,
        "\n".join(
            f"{a['actor']}  {a['name']}: "
            + (", ".join(f"{o['name']} ({o['id']})" for o in a["organizations"]) or "none known")
            for a in result["actors"]
        ),
    )


@org_app.command("relations")
def org_relations(
    org: Annotated[str, typer.Argument(help="The organization: an id, name or alias.")],
    hops: Annotated[int, typer.Option(help="How far to follow relations: 1, 2 or 3.")] = 2,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    audience: HearOption = None,
    json: JsonOption = False,
):
    """An organization's relations (customer_of, vendor_of, parent_of), either way, to N hops."""
    with _reading(kb, perspective, audience) as session:
        result = session.relations(org, hops)
    render.out(
        json,
        result,
        "\n".join(f"{r['hop']}  {r['sentence']}  [{r['fact']}]" for r in result["relations"]) or "no relations known",
    )


@org_app.command("digest")
def org_digest(
    org: Annotated[str, typer.Argument(help="The organization: an id, name or alias.")],
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    audience: HearOption = None,
    json: JsonOption = False,
):
    """A markdown digest of an organization: its names, confirmed attributes (conflicts marked),
    relations, people, unverified claims, each with its fact id and source. A view, never a source
    of truth; for an audience, only what it may hear."""
    from kgrdf import digest

    with _reading(kb, perspective, audience) as session:
        result = digest.of(session, org, audience)
    render.out(json, result, result["markdown"])


@app.command()
def expire(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would expire or be deleted; change nothing.")
    ] = False,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Expire proposals not observed again for 30 days (KGRDF_PROPOSAL_DAYS; kept, with status
    expired; proposing one again revives it) and delete facts naming a person not observed or
    confirmed again for 365 days (KGRDF_RETENTION_DAYS) as kg forget deletes: from the data, the private journal
    (their changes become placeholders) and the git history (restarted). Says how many, never whom."""
    from kgrdf import forget, settings

    proposal_days, retention_days = settings.get("KGRDF_PROPOSAL_DAYS"), settings.get("KGRDF_RETENTION_DAYS")
    base = _kb(kb, perspective)
    with base.writing("expire", dry_run=dry_run) as writer:
        expired = len(writer.expire_proposals(proposal_days))
        due = writer.past_retention(retention_days, writer.now)
    # counted in the write; deleted as they stand once the deletion holds the folder (a write may come between)
    deleted = len(due) if dry_run or not due else forget.purge_past_retention(base, retention_days)
    if not dry_run:
        base.remove_indexes_left()  # (what a deletion before it left on a server that did not answer)
    verb = ("would expire", "would delete") if dry_run else ("expired", "deleted")
    render.out(
        json,
        {
            "expired": expired,
            "deleted": deleted,
            "dry_run": dry_run,
            "proposal_days": proposal_days,
            "retention_days": retention_days,
        },
        f"{verb[0]} {expired} proposal{'s' if expired != 1 else ''} not observed again for {proposal_days} days; "
        f"{verb[1]} {deleted} person fact{'s' if deleted != 1 else ''} past retention ({retention_days} days)"
        + ("; the git history was restarted" if deleted and not dry_run else ""),
    )


@app.command()
def forget(
    person: Annotated[
        str, typer.Argument(metavar="PERSON", help="The person or actor: person/ID (or a name or alias).")
    ],
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="List what would be deleted, each fact about them or only naming them; change nothing. "
            "One the shared journal refuses is listed all the same, then refused (exit 1).",
        ),
    ] = False,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """Forget a person on request: every fact, name and identifier naming them leaves the data, the
    private journal (each of their changes becomes a placeholder keeping its sequence number), the
    git history (restarted), leftovers and journals moved aside. Only a keyed hash of the id is kept
    (forgotten.jsonl), so adding them again needs --allow-forgotten. Refused when the shared journal
    names them: it is never rewritten. Exits 1 then, the dry run too, after listing what it would delete."""
    from kgrdf import forget as forgetting

    result = forgetting.forget(_kb(kb, perspective), person, dry_run=dry_run)
    facts, ids = result["facts"], result["identifiers"]
    redacted = result.get("redacted", 0)
    kept = (
        f" (and {redacted} fact{'s' if redacted != 1 else ''} kept, the records naming them taken out)"
        if redacted
        else ""
    )
    revoked = result.get("tokens", 0)
    if dry_run:
        names = ", ".join(result.get("token_names", []))
        revoked = (
            f", and would revoke {revoked} token{'s' if revoked != 1 else ''} naming them ({names})" if revoked else ""
        )
        text = (
            f"would forget {result['entity']}: {facts} fact{'s' if facts != 1 else ''}{kept} and "
            f"{ids} identifier{'s' if ids != 1 else ''}{revoked}"
        )
        text += "".join(
            f"\n  {one['id']}  {'about them' if one['why'] == 'about' else 'names them'}: {one['sentence'] or '?'}"
            for one in result["going"][:FORGET_SHOWN]
        )
        if len(result["going"]) > FORGET_SHOWN:
            text += f"\n  ... and {len(result['going']) - FORGET_SHOWN} more (--json lists them all)"
        text += _others_named(result["others"], "would go")
        text += "".join(
            "\n"
            + forgetting.elsewhere_note(
                result["entity"],
                other,
                other not in result["elsewhere_in_text_only"],
                other in result["elsewhere_shared"],
            )
            for other in result["elsewhere"]
        )
    else:
        revoked = f", {revoked} token{'s' if revoked != 1 else ''} naming them revoked" if revoked else ""
        text = (
            f"forgot {result['entity']}: {facts} fact{'s' if facts != 1 else ''}{kept}, {result['records']} journal "
            f"records ({_placeholders(result['placeholders'])}), {ids} identifier"
            f"{'s' if ids != 1 else ''}{revoked}, {result['leftovers']} leftover"
            f"{'s' if result['leftovers'] != 1 else ''}; the git history was restarted. Adding them again needs "
            f"--allow-forgotten."
        )
        text += _others_named(result["others"], "went")
    render.out(json, result, text)
    if dry_run and result["refused"]:  # said as the forget itself would say it, after what it would delete
        from kgrdf.errors import Refused

        render.error(Refused(result["refused"]["message"], hint=result["refused"]["hint"]), as_json=False)
        raise typer.Exit(1)


def _others_named(others: list[str], went: str) -> str:
    """The other entities a forget changes: a name of theirs naming the person becomes their id, an
    alias or summary naming them goes."""
    if not others:
        return ""
    shown = ", ".join(others[:FORGET_SHOWN]) + (
        f" and {len(others) - FORGET_SHOWN} more" if len(others) > FORGET_SHOWN else ""
    )
    return (
        f"\n  {len(others)} other entit{'ies' if len(others) != 1 else 'y'} named them in a name, alias or summary, "
        f"which {went} (a name becomes the entity's id): {shown}"
    )


def _placeholders(n: int) -> str:
    return f"{n} change is a placeholder now" if n == 1 else f"{n} changes are placeholders now"


# --- reading --------------------------------------------------------------------------------------


@app.command()
def perspectives(kb: KbOption = None, perspective: PerspectiveOption = None, json: JsonOption = False):
    """The perspectives (whose knowledge) the knowledge base holds, with their counts. Every other
    command reads and writes one of them: --perspective, else KGRDF_PERSPECTIVE, else the default."""
    with _kb(kb, perspective).reading() as session:
        found = session.perspectives()
    render.out(
        json,
        {"perspectives": found},
        "\n".join(
            f"{'*' if p['current'] else ' '} {p['perspective']}  "
            f"{render.counted(p['entities'], 'entity', 'entities')}, {render.counted(p['facts'], 'fact')}"
            + ("  (default)" if p["default"] else "")
            for p in found
        ),
    )


@app.command()
def mentions(
    text: Annotated[str, typer.Argument(help="The message: its text, or - to read it from standard input.")],
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """The known names and aliases a message mentions (whole words, any case; the longest name wins
    where names overlap): the cheap, deterministic step before any extraction. Weak aliases are not
    mentions."""
    from kgrdf import inputs

    # (as kg serve's mentions takes it: bounded, and in NFC, in which names are kept and offsets counted)
    text = inputs.standard_input("the message") if text == "-" else inputs.text(text, "the message")
    with _kb(kb, perspective).reading() as session:
        found = session.mentions(text)
    render.mentions(json, text, found)


@app.command()
def lookup(
    entity: Annotated[str, typer.Argument(help="An entity id, name or alias.")],
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    audience: HearOption = None,
    json: JsonOption = False,
):
    """An entity and its current facts with their sources, and the facts that point to it."""
    with _reading(kb, perspective, audience) as session:
        result = session.lookup(entity)
    render.lookup(json, result)


@app.command()
def facts(
    subject: Annotated[str, typer.Argument(help="An entity id, name or alias.")],
    predicate: Annotated[str | None, typer.Option("--predicate", "-p", help="Only this predicate.")] = None,
    as_of: Annotated[str | None, typer.Option(help="Valid time: what was true in the world at T.")] = None,
    known_at: Annotated[str | None, typer.Option(help="Transaction time: what the knowledge base held at T.")] = None,
    all: Annotated[
        bool, typer.Option("--all", help="Every fact: proposed, confirmed, rejected, expired and closed.")
    ] = False,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    audience: HearOption = None,
    json: JsonOption = False,
):
    """Facts about a subject: current by default; --as-of and --known-at combine (--all, every
    fact whatever its valid time, takes --known-at alone)."""
    if all and as_of is not None:
        from kgrdf.errors import BadInput

        raise BadInput(
            "--all lists every fact whatever its valid time and does not take --as-of: give one of them "
            "(--as-of T lists the facts true at T)"
        )
    when, known = _time(as_of, "--as-of"), _time(known_at, "--known-at")
    with _reading(kb, perspective, audience) as session:
        result = session.facts(subject, predicate=predicate, as_of=when, known_at=known, everything=all)
    render.facts(json, result)


@app.command()
def search(
    text: Annotated[str, typer.Argument(help="Text to find in ids, names, aliases and weak aliases.")],
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    audience: HearOption = None,
    json: JsonOption = False,
):
    """Find entities by a part of their id, name, alias or weak alias, ignoring case."""
    with _reading(kb, perspective, audience) as session:
        hits = session.search(text)
    render.search(json, text, hits)


@app.command()
def neighbors(
    entity: Annotated[str, typer.Argument(help="An entity id, name or alias.")],
    hops: Annotated[int, typer.Option(help="How many facts away (1 to 4).")] = 1,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    audience: HearOption = None,
    json: JsonOption = False,
):
    """The entities within N current facts of an entity, and the facts that link them."""
    with _reading(kb, perspective, audience) as session:
        result = session.neighbors(entity, hops)
    render.neighbors(json, result)


@app.command()
def history(
    fact_id: Annotated[str, typer.Argument(metavar="FACT_ID", help="The fact id.")],
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    audience: HearOption = None,
    json: JsonOption = False,
):
    """A fact and every change to it, with what each field held before."""
    with _reading(kb, perspective, audience) as session:
        result = session.history(fact_id)
    render.history(json, result)


@app.command()
def disclosures(
    fact_id: Annotated[str, typer.Argument(metavar="FACT_ID", help="The fact id.")],
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    audience: HearOption = None,
    json: JsonOption = False,
):
    """Who was told a fact: each disclosure's audience, message, time and who recorded it, oldest
    first (kg disclose and kg context --record record them)."""
    from kgrdf import disclosure

    with _reading(kb, perspective, audience) as session:
        result = disclosure.of_fact(session, fact_id)
    render.disclosures(json, result)


@app.command()
def told(
    told_to: Annotated[
        str,
        typer.Argument(metavar="AUDIENCE", help="The audience told: public, workspace:W, channel:C, dm:A,B, owner."),
    ],
    since: Annotated[
        str | None, typer.Option("--since", help="Only what was told from then on (a date or time).")
    ] = None,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """What an audience was told, newest first: each fact disclosed to exactly that audience, in which
    message, when and by whom."""
    from kgrdf import disclosure

    with _reading(kb, perspective) as session:
        result = disclosure.told(session, told_to, since)
    render.told(json, result)


@app.command()
def sparql(
    query: Annotated[str, typer.Argument(metavar="QUERY_OR_FILE", help="A SPARQL query, or the path of a .rq file.")],
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            show_default=False,
            help="Stop the query after this many seconds (exit 1). Default: $KGRDF_QUERY_TIMEOUT, else 30; never "
            "longer than writers wait for the lock ($KGRDF_LOCK_TIMEOUT less 5 s).",
        ),
    ] = None,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    audience: HearOption = None,
    json: JsonOption = False,
):
    """Run a SPARQL query over the knowledge base (facts are named graphs; see README). A sandbox:
    no SERVICE, a time limit, bounded size and nesting."""
    from kgrdf import sandbox

    limit = sandbox.time_limit(timeout)
    text = sandbox.query_text(query)
    with _reading(kb, perspective, audience) as session:
        result = session.sparql(text, limit)
    render.sparql(json, result)  # the answer is read whole: the lock is free while it prints


@app.command()
def export(
    format: Annotated[
        str,
        typer.Option(
            "--format", "-f", help="trig, nquads or jsonld (the whole dataset), or turtle (current facts as one graph)."
        ),
    ] = "trig",
    output: Annotated[Path | None, typer.Option("--output", help="Write to this file instead of stdout.")] = None,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    audience: HearOption = None,
    json: JsonOption = False,
):
    """Write the knowledge base in a standard RDF syntax that other RDF tools read back. It is
    written as it is read, in bounded memory; --output replaces the file only once the export is
    whole (an export cut short leaves the file as it was)."""
    from kgrdf import files
    from kgrdf.errors import BadInput

    with _reading(kb, perspective, audience) as session:
        if output is not None or not sys.stdout.isatty():  # (the terminal sees nothing come: say what runs)
            what = f"what the audience {audience} may read" if audience else "the knowledge base"
            session.kb.note(f"exporting {what} as {format} ...")
        if output is None and json:
            data = session.export(format)
        elif output is None:
            session.export_to(format, sys.stdout.buffer)
            return
        else:
            try:
                with files.written_whole(output, outside=session.kb.path) as out:
                    session.export_to(format, out)
            except OSError as exc:
                raise BadInput(f"cannot write {output}: {exc.strerror or exc}") from None
    if output is None:
        render.out(True, {"format": format, "data": data.decode("utf-8")}, "")
        return
    render.out(
        json,
        {"output": str(output), "format": format, "bytes": out.written},
        f"wrote {out.written} bytes of {format} to {output}",
    )


@app.command()
def stats(kb: KbOption = None, perspective: PerspectiveOption = None, json: JsonOption = False):
    """How much the knowledge base holds: entities by type, facts by status."""
    with _kb(kb, perspective).reading() as session:
        result = session.stats()
    render.stats(json, result)


index_app = _group("index", "Where the index lives: on disk in the folder, or on a SPARQL server.", True)


@index_app.command("move")
def index_move(
    to: Annotated[
        str,
        typer.Argument(
            metavar="URL|disk",
            help="A SPARQL 1.1 server's address (as for kg init --index), or disk for the folder's own index.",
        ),
    ],
    kb: KbOption = None,
    json: JsonOption = False,
):
    """Move the index: build it from the journal on a SPARQL server (or back on disk) and use it
    from now on. The journal stays where it is; the server must answer and hold no other knowledge
    base's index. Until the new index is whole, the old one stays in use."""
    url = None if to == "disk" else to
    result = _kb(kb).move_index(url)
    render.out(json, result, f"the index is on {url or 'disk'} now, at transaction {result['transaction']}")


def _compacting_notice(json: bool):
    """What kg index compact and kg validate say on a terminal before they compact the index."""

    def compacting(files: int) -> None:
        if sys.stderr.isatty() and not json:
            print(f"compacting the index ({files} files) ...", file=sys.stderr)

    return compacting


@index_app.command("compact")
def index_compact(kb: KbOption = None, json: JsonOption = False):
    """Merge the index's files into as few as they can be. Each large write (an import, a sync)
    that is small beside the index leaves the files of its bulk load as they are, and a read of
    every quad (kg validate, kg export) reads through all of them: at 100k facts grown by many
    imports, 65 s instead of 15 s. Compacting takes seconds there and milliseconds on an index
    already compact; what the index holds does not change. kg validate does it first."""

    result = _kb(kb).compact_index(_compacting_notice(json))
    if result is None:
        render.out(
            json,
            {"compacted": False},
            "nothing to compact: there is no index on disk here (it is on a SPARQL server, or not made yet)",
        )
        return
    render.out(
        json,
        {"compacted": True, **result},
        f"compacted the index: {result['files_before']} files, now {result['files_after']}, in {result['seconds']:.1f} s",
    )


@app.command()
def status(kb: KbOption = None, json: JsonOption = False):
    """Where the journal ends and where the index stands: on disk or on a SPARQL server, the
    transaction it reflects and how many it is behind; each remote's last sync, and what a sync set
    aside. A server that does not answer is reported (the index catches up when it is back); kg
    status itself still exits 0."""
    from kgrdf import sync as syncing

    base = _kb(kb)
    render.status(json, {**base.status(), "sync": syncing.status(base)})


remote_app = _group(
    "remote",
    "The hubs this knowledge base shares its journal with: SPARQL 1.1 servers (an Oxigraph server, "
    "Virtuoso) that keep each replica's shared journal, so that kg sync can exchange them.",
    True,
)


@remote_app.command("add")
def remote_add(
    name: Annotated[str, typer.Argument(help="A short name for the hub: lower-case letters, digits, - or _.")],
    url: Annotated[
        str,
        typer.Argument(
            help="The hub's address, as for kg init --index: http://HOST:PORT for an Oxigraph server, "
            "http://HOST:PORT/sparql for Virtuoso. No user or password in it: format.json, which keeps it, is in git."
        ),
    ],
    kb: KbOption = None,
    json: JsonOption = False,
):
    """Add a hub to sync with (kg sync NAME). Nothing is sent until kg sync runs.

    Example: kg remote add team http://hub.example:7878"""
    from kgrdf import sync as syncing

    result = syncing.add_remote(_kb(kb), name, url)
    render.out(json, result, f"added the remote {name} ({url}); kg sync {name} shares with it")


@remote_app.command("list")
def remote_list(kb: KbOption = None, json: JsonOption = False):
    """The hubs this knowledge base syncs with, and when each was last synced."""
    from kgrdf import sync as syncing

    render.remotes(json, syncing.status(_kb(kb)))


@remote_app.command("remove")
def remote_remove(
    name: Annotated[str, typer.Argument(help="The remote's name (kg remote list).")],
    kb: KbOption = None,
    json: JsonOption = False,
):
    """Stop syncing with a hub. What was pulled from it stays in the knowledge base."""
    from kgrdf import sync as syncing

    result = syncing.remove_remote(_kb(kb), name)
    render.out(json, result, f"removed the remote {name} ({result['url']})")


@app.command()
def sync(
    name: Annotated[
        str | None, typer.Argument(help="The remote to sync with (kg remote list). Default: every remote.")
    ] = None,
    kb: KbOption = None,
    json: JsonOption = False,
):
    """Share with the team: push this replica's shared journal to the hub, pull the other replicas'
    patches, and fold them in as one write.

    The private journal (everything that names a person, what was heard in a DM, the user's own
    words) never leaves this machine. A fact another replica holds becomes one fact here, observed
    with both replicas' sources; confirmed there, it is confirmed here; rejected there, it stays
    rejected everywhere. Two confirmed values of a single-valued predicate from two replicas both
    stay, and kg lint reports them for a person to decide; once a person decides on one replica
    (kg confirm, kg supersede), the value closed there is closed here too. What is refused here (by
    the shapes, as another perspective's) is set aside and listed, never dropped, and tried again
    at each sync until it folds: kg status shows it. An entity's name or summary, and a current
    fact's valid time, take the latest a person gave them on any replica. A remote that does not
    answer is passed over (exit 1, naming it) and the others are synced. Syncing again changes nothing until someone writes.

    Example: kg remote add team http://10.0.0.1:7878, then kg sync (or kg sync team)."""
    from kgrdf import sync as syncing
    from kgrdf.errors import Refused

    try:
        render.synced(json, syncing.sync(_kb(kb), name))
    except Refused as exc:  # remotes passed over: what the others brought is shown, then the refusal
        if not json and any("error" not in remote for remote in exc.details.get("remotes", [])):
            render.synced(False, exc.details)
        raise


@app.command()
def validate(kb: KbOption = None, perspective: PerspectiveOption = None, json: JsonOption = False):
    """Check the whole knowledge base: every fact and entity against the SHACL shapes, and the store
    itself (journal position, index equal to a rebuild, torn tail, files edited outside kgrdf).
    An index on disk is compacted first (as kg index compact does): its scan is then up to four
    times faster.

    Exits 0 when clean (warnings allowed), 1 with violations, 3 when the store is damaged.
    """

    def progress(facts):
        if sys.stderr.isatty() and not json:
            print(f"checking {facts} facts against the shapes ...", file=sys.stderr)

    report = _kb(kb, perspective).validate(progress=progress, compacting=_compacting_notice(json))
    render.validation(json, report)
    if report["damage"]:
        raise typer.Exit(3)
    if any(f["severity"] == "violation" for f in report["findings"]):
        raise typer.Exit(1)


schema_app = _group("schema", "The effective schema, and checks of a site's schema extension.")


@schema_app.callback(invoke_without_command=True)
def schema(
    ctx: typer.Context,
    format: Annotated[str, typer.Option("--format", "-f", help="text, or turtle (the effective ontology).")] = "text",
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    json: JsonOption = False,
):
    """The effective schema: entity types and predicates with their axis, markers and reviewer
    sentences, the core ontology plus the knowledge base's schema.json when it is accepted."""
    from kgrdf.errors import BadInput

    if ctx.invoked_subcommand:
        return
    if format not in ("text", "turtle"):
        raise BadInput(f"unknown schema format {format!r}; use text or turtle")
    base = _kb(kb, perspective)
    with base.reading() as session:
        effective, quads = session.schema, session.backend.schema_quads()
    extension = None
    if (base.path / "schema.json").is_file():
        from kgrdf import extension as extension_module

        ext = extension_module.check_file(base.path / "schema.json", cache=base.path / "cache")
        extension = {"accepted": ext.accepted, "problems": ext.problems}
    if format == "turtle":
        import pyoxigraph as ox

        triples = [ox.Triple(q.subject, q.predicate, q.object) for q in quads]
        data = ox.serialize(triples, format=ox.RdfFormat.TURTLE, prefixes=schema_module_prefixes())
        if json:  # one JSON document, as kg export --json gives its text
            render.out(True, {"format": format, "data": data.decode("utf-8")}, "")
        else:
            sys.stdout.buffer.write(data)
        return
    render.schema(json, effective, extension)


def schema_module_prefixes() -> dict:
    from kgrdf import vocab

    return {**vocab.PREFIXES, "site": "https://kgrdf.org/ns/site#"}


@schema_app.command("check")
def schema_check(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A schema.json to check, without installing it.")],
    kb: Annotated[
        Path | None,
        typer.Option(
            "--kb",
            show_default=False,
            callback=_tilde,
            help="Check it as this knowledge base's next schema.json: it must also keep every site type and "
            "predicate the knowledge base's entities and facts use, and make no fact or entity that conforms "
            "break a shape (the shapes run on all its data: about 20 s at 100k facts). Default: $KGRDF_HOME when it is set; "
            "with neither, the file is checked against the core schema alone.",
        ),
    ] = None,
    json: JsonOption = False,
):
    """Check a site schema extension without installing it: every name valid and clashing with no
    core or site name (by key and by IRI, in any case or Unicode form) and no reserved word, then
    its OWL RL closure with the core ontology against the shapes for schemas; with a knowledge
    base, also that it keeps what the data uses and leaves it valid. To install it, copy it to the
    knowledge base's schema.json.

    Exits 0 when it would be accepted, 1 when it would be refused (each problem on a line of its
    own), 2 when the file cannot be read (missing, a folder, too large).
    """
    from kgrdf import extension, validation

    given = ctx.parent.params if ctx.parent else {}  # kg schema --kb PATH --json check FILE says the same
    kb, json = kb or given.get("kb"), json or bool(given.get("json"))
    raw = extension.read(file)
    base = _kb(kb) if kb is not None or os.environ.get("KGRDF_HOME") else None
    ext = validation.check_schema(raw, file.name, file, kb=base)
    where = f" as the schema.json of {base.path}" if base is not None else ""
    render.out(
        json,
        {
            "file": str(file),
            "kb": str(base.path) if base is not None else None,
            "accepted": ext.accepted,
            "problems": ext.problems,
            "types": ext.types,
            "predicates": sorted(ext.predicates),
        },
        f"{file}: accepted{where}"
        if ext.accepted
        else f"{file}: refused{where}\n" + "\n".join(f"  {p}" for p in ext.problems),
    )
    if not ext.accepted:
        raise typer.Exit(1)


@app.command()
def context(
    target: Annotated[
        str | None,
        typer.Option(
            "--for",
            metavar="ENTITY|TOPIC",
            help="An entity id, name or strong "
            "alias; else a topic: the few entities whose names match it, exact matches first.",
        ),
    ] = None,
    message: Annotated[
        str | None,
        typer.Option(
            help="A message: the pack is about the entities it mentions "
            "(as kg mentions finds them); - reads it from standard input."
        ),
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(help="At most this many tokens. Default: $KGRDF_CONTEXT_BUDGET, else 1500.", show_default=False),
    ] = None,
    record: Annotated[
        str | None,
        typer.Option(
            "--record",
            metavar="REF",
            help="Record the facts of the pack printed as told to its audience (--audience) in the message REF.",
        ),
    ] = None,
    kb: KbOption = None,
    perspective: PerspectiveOption = None,
    audience: HearOption = None,
    json: JsonOption = False,
):
    """A small cited pack for a task brief: current, confirmed facts about a repo, process or topic (or
    about what a message mentions, with --message) and its close neighbourhood, the self organization
    first, each with its fact id and a source, what prevents rework first, then the
    most specific, cut from the bottom to the token budget (the pack says how many facts it left out).

    Tokens are counted by a stated approximation that over-counts real tokenizers: a run of letters is
    ceil(length/4), each digit, punctuation mark and newline 1, a run of spaces ceil(length/4), a
    non-ASCII character its UTF-8 bytes. --json gives the facts, the markdown, the tokens used and the
    method. Exits 1 when --for matches nothing (a --message that mentions no known name gives a pack
    that says so), 2 when the budget cannot hold even the pack's title. With --record REF, the pack's facts
    are recorded as told to its audience in the message REF (kg disclosures reads them back), and
    --json adds what was recorded ("recorded").
    """
    from kgrdf import context as context_module
    from kgrdf import settings
    from kgrdf.errors import BadInput

    if (target is None) == (message is None):
        raise BadInput("give one of --for ENTITY|TOPIC and --message TEXT")
    if message is not None:
        from kgrdf import inputs

        message = inputs.standard_input("the message") if message == "-" else inputs.text(message, "the message")
    budget = budget if budget is not None else settings.get("KGRDF_CONTEXT_BUDGET")
    if record is not None:
        from kgrdf import disclosure

        audience = disclosure.told_to(audience)  # a pack to record is for an audience that parses
    with _reading(kb, perspective, audience) as session:
        if message is not None:
            result = context_module.pack_for_message(session, message, budget)
        else:
            result = context_module.pack(session, target, budget)
    if record is not None:
        result["recorded"] = disclosure.record_pack(_kb(kb, perspective), result, record, audience)
    render.out(json, result, result["markdown"])


@app.command()
def lint(kb: KbOption = None, perspective: PerspectiveOption = None, json: JsonOption = False):
    """What needs a person's attention, each finding with the command that fixes it: stale facts
    (confirmed, not seen for $KGRDF_STALE_DAYS, else 180 days), contradictions (two current values of
    a single-valued predicate), overlaps (two values of one that held at once, one of them closed),
    orphan entities, alias collisions between people, merge suggestions (near-identical names of one
    type), look-alike names (mixed scripts, or folding into another's), and facts naming a person past
    retention ($KGRDF_RETENTION_DAYS, else 365 days; ids only).

    --json prints {"now", "settings", "findings": [{"kind", "message", "entities", "facts", "fix",
    "alternatives"}], "counts": {kind: n}}. Exits 0 when there is nothing to fix, 1 with findings.
    """
    from kgrdf import lint as lint_module

    with _kb(kb, perspective).reading() as session:
        result = lint_module.lint(session)
    render.out(json, result, lint_module.text(result))
    if result["findings"]:
        raise typer.Exit(1)


@app.command()
def demo(
    kb: Annotated[
        Path | None,
        typer.Option("--kb", callback=_tilde, help="Load the example into this folder (default: a temporary one)."),
    ] = None,
    json: JsonOption = False,
):
    """Load the example organization and show a lookup, a two-hop question, a fact's history and a
    context pack."""
    from kgrdf import demo as demo_module

    demo_module.run(kb, json)


def main() -> None:
    """The entry point of ``kg`` and ``python -m kgrdf``."""
    _standard_streams()
    _only_the_command_asked(sys.argv[1:])
    app()


def _only_the_command_asked(arguments: list[str]) -> None:
    """Keep, of kg's commands, only the one the arguments name: typer makes the parser of every
    command it has before it reads a single argument, which for kg's sixty took 35-40 ms of each
    run (a sixth of a cold kg lookup). A command is asked for by the first argument; kg alone, kg -h
    COMMAND and a name that is no command keep them all, for the list of commands and the names a
    typo is told it may have meant."""
    from typer.main import get_command_name

    if not arguments:
        return
    name = arguments[0]
    commands = [
        command
        for command in app.registered_commands
        if (command.name or get_command_name(command.callback.__name__)) == name
    ]
    groups = [group for group in app.registered_groups if group.name == name]
    if commands or groups:
        app.registered_commands, app.registered_groups = commands, groups
