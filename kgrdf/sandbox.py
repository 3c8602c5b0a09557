"""What a user's SPARQL text must pass before kgrdf runs it (§7: ``kg sparql`` is a sandbox).

Three checks, made on the text alone by a small scanner, before any parser sees it:

- size: at most MAX_BYTES of UTF-8;
- nesting: brackets, braces and parentheses at most MAX_NESTING deep (Oxigraph's parser and
  evaluator recurse, and a query nested a few thousand deep overflows the stack);
- no update: the first keyword after the prologue (PREFIX and BASE) must not start one (INSERT,
  DELETE, LOAD ...), which would only be told "does not parse" by a query parser; the knowledge
  base changes through its commands, never through kg sparql;
- no ``SERVICE``: it would send requests, with data of the knowledge base in them, to any host.
  pyoxigraph has no switch to turn it off, so the keyword is refused in any spelling (any case,
  ``SERVICE SILENT``, ``SERVICE ?u``, glued to what is around it, as Oxigraph's parser accepts
  ``1SERVICE<...>`` and ``SERVICESILENT``), while the word inside a string, an IRI, a comment, a
  variable, a language tag or a prefixed name (``kg:Service``) is left alone.

The scanner knows SPARQL's lexical forms only as far as it must to find code: comments, strings
(short and long, with escapes), IRIs, variables and language tags. Where it cannot tell (an
unclosed string), it refuses rather than guess. The query still goes to the engine afterwards, in
a bounded child process (see :mod:`kgrdf.store.bounded`), which catches what text checks cannot.
"""

import re

from kgrdf.errors import BadInput, Refused

MAX_BYTES = 1024 * 1024
MAX_NESTING = 64

_IRI = re.compile(r'<(?:[^<>"{}|^`\\\x00-\x20]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*>')
# SPARQL's name characters (PN_CHARS, the grammar's letters beyond ASCII included)
_NAME = (
    "A-Za-z0-9_\u00b7\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u037d\u037f-\u1fff\u200c-\u200d"
    "\u203f-\u2040\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd"
    "\U00010000-\U000effff"
)
_VARNAME = re.compile(f"[{_NAME}]*")
_LANGTAG = re.compile(r"[A-Za-z]+(?:-[A-Za-z0-9]+)*")
# A run of characters that can make one name (a prefixed name, a keyword, a number), with the
# escapes a prefixed name's local part may hold (PN_LOCAL_ESC: ``ex:a\#b`` is one name, whose "#"
# starts no comment, and ``ex:a\(`` opens no bracket).
_RUN = re.compile(f"(?:[{_NAME}\\-.:%]|\\\\[_~.\\-!$&'()*+,;=/?#@%]|\\\\)+")
_SERVICE = re.compile(r"service", re.IGNORECASE)
# The keywords an update (SPARQL 1.1 Update) starts with, and those of a prologue before it
_UPDATES = {"INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH"}
_PROLOGUE = {"PREFIX", "BASE"}
_OPEN, _CLOSE = "([{", ")]}"


def check(text: str) -> None:
    """Refuse a query text kgrdf must not run. Raises BadInput (too large, nested too deep, a
    string left open) or Refused (``SERVICE``).

    >>> check('SELECT * WHERE { ?s a kg:Service ; ?p "service" }')
    """
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > MAX_BYTES:
        raise BadInput(f"the query is {size:,} bytes; kg sparql runs queries of at most {MAX_BYTES:,} bytes")
    form = _Form()
    for kind, token in _code(text):
        if kind == "run":
            _check_run(text, token)
            form.see(text, token)


def dataset(text: str) -> tuple[list[str], list[str]] | None:
    """The graphs a query's own dataset clauses name: (FROM's, FROM NAMED's) as IRIs, prefixed
    names and relative IRIs resolved as the query's PREFIX and BASE say; None when it has none.
    A query that names one reads those graphs alone (SPARQL 1.1, 13.2), so the caller narrows the
    dataset it may read to them, where it would otherwise replace the query's own. Run on a text
    that passed :func:`check`.

    >>> dataset('PREFIX g: <http://ex/> SELECT * FROM g:one FROM NAMED <http://ex/two> { ?s ?p ?o }')
    (['http://ex/one'], ['http://ex/two'])
    """
    froms, named, spans = _dataset_clauses(text)
    return (froms, named) if spans else None


def without_dataset(text: str) -> str:
    """The query with its FROM and FROM NAMED clauses blanked out (spaces, so that an error's line
    and column stay where they were): for a server that would read them past the dataset it is
    sent (Virtuoso takes a query's FROM NAMED over the protocol's named-graph-uri).

    >>> without_dataset('SELECT * FROM <urn:a> FROM NAMED p:b { ?s ?p ?o }')
    'SELECT *                             { ?s ?p ?o }'
    """
    for start, end in reversed(_dataset_clauses(text)[2]):
        text = text[:start] + re.sub(r"[^\n\r]", " ", text[start:end]) + text[end:]
    return text


def _dataset_clauses(text: str) -> tuple[list[str], list[str], list[tuple[int, int]]]:
    """FROM's graphs, FROM NAMED's, and where each clause is in the text (dataset)."""
    from urllib.parse import urljoin

    prefixes: dict[str, str] = {}
    froms: list[str] = []
    named: list[str] = []
    spans: list[tuple[int, int]] = []
    base, want, pending, start = "", None, "", 0
    for kind, token in _code(text):
        word = token.group() if kind == "run" else _iri_text(token.group())
        if kind == "iri":
            iri = urljoin(base, word) if base else word
            if want == "prefix-iri":
                prefixes[pending] = iri
            elif want == "base":
                base = iri
            elif want in ("from", "named"):
                (named if want == "named" else froms).append(iri)
                spans.append((start, token.end()))
            want = None
        elif want == "prefix-name":
            pending, want = word.partition(":")[0], "prefix-iri"
        elif want == "from" and word.upper() == "NAMED":
            want = "named"
        elif want in ("from", "named") and ":" in word:
            prefix, _, local = word.partition(":")
            local = re.sub(r"\\(.)", r"\1", local)
            (named if want == "named" else froms).append(prefixes.get(prefix, prefix + ":") + local)
            spans.append((start, token.end()))
            want = None
        else:
            want = {"PREFIX": "prefix-name", "BASE": "base", "FROM": "from"}.get(word.upper())
            start = token.start()
    return froms, named, spans


def _iri_text(token: str) -> str:
    """An IRI's text between its brackets, its \\u and \\U escapes read."""
    body = token[1:-1]
    if "\\" not in body:
        return body
    return re.sub(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})", lambda m: chr(int(m.group(1) or m.group(2), 16)), body)


def _code(text: str):
    """The query's code, as ("iri", match) and ("run", match) tokens in order: comments, strings,
    variables and language tags skipped, brackets counted. Raises BadInput for brackets nested
    past MAX_NESTING and for a string left open."""
    depth, pos, end = 0, 0, len(text)
    while pos < end:
        char = text[pos]
        if char == "#":
            newline = min((i for i in (text.find("\n", pos), text.find("\r", pos)) if i >= 0), default=end)
            pos = newline
        elif char in "\"'":
            pos = _skip_string(text, pos)
        elif char == "<":
            match = _IRI.match(text, pos)
            if match:
                yield "iri", match
            pos = match.end() if match else pos + 1  # else the operator "<" or "<="
        elif char in "?$":
            pos = _VARNAME.match(text, pos + 1).end()
        elif char == "@":
            tag = _LANGTAG.match(text, pos + 1)
            pos = tag.end() if tag else pos + 1
        elif char in _OPEN:
            depth += 1
            if depth > MAX_NESTING:
                line = text.count("\n", 0, pos) + 1
                raise BadInput(
                    f"the query nests brackets, braces or parentheses more than {MAX_NESTING} deep (line {line})"
                )
            pos += 1
        elif char in _CLOSE:
            depth = max(depth - 1, 0)
            pos += 1
        elif (run := _RUN.match(text, pos)) is not None:
            yield "run", run
            pos = run.end()
        else:
            pos += 1


class _Form:
    """Which form the query takes: its first keyword after the prologue (a prefix's name, the run
    after PREFIX, skipped), refused when it starts an update."""

    def __init__(self) -> None:
        self.found, self.prefix_name_next = False, False

    def see(self, text: str, run: re.Match) -> None:
        if self.found:
            return
        if self.prefix_name_next:
            self.prefix_name_next = False
            return
        word = run.group().upper()
        if word in _PROLOGUE:
            self.prefix_name_next = word == "PREFIX"
            return
        self.found = True
        if word in _UPDATES:
            line = text.count("\n", 0, run.start()) + 1
            raise Refused(
                f"kg sparql reads, and {word} (line {line}) starts an update: the knowledge base changes through "
                "its commands alone",
                hint="kg propose, kg supersede, kg import and the others write, each with its checks; "
                "kg sparql asks SELECT, ASK, CONSTRUCT or DESCRIBE",
            )


def _check_run(text: str, run: re.Match) -> None:
    """A run of name characters holds the keyword SERVICE when "service" appears in it before any
    colon: after a colon it is the local part of a prefixed name (``kg:Service``), which Oxigraph
    reads whole; before one, the parser may end a token (a number, ``true``) and read SERVICE."""
    body = run.group()
    found = _SERVICE.search(body)
    if found is not None and ":" not in body[: found.start()]:
        line = text.count("\n", 0, run.start() + found.start()) + 1
        raise Refused(
            f"kg sparql does not run SERVICE (line {line}): no request leaves the machine",
            hint="query the knowledge base alone; a remote endpoint is queried with its own tools",
        )


def _skip_string(text: str, pos: int) -> int:
    """The position after the string literal starting at ``pos`` (short or long, with escapes).
    Raises BadInput for a string left open, or a short one running past its line."""
    quote = text[pos]
    long = text.startswith(quote * 3, pos)
    pos += 3 if long else 1
    end = len(text)
    while pos < end:
        char = text[pos]
        if char == "\\":
            pos += 2
        elif long and text.startswith(quote * 3, pos):
            # a long string may end with one or two of its quotes before the closing three
            while text.startswith(quote * 4, pos):
                pos += 1
            return pos + 3
        elif not long and char == quote:
            return pos + 1
        elif not long and char in "\n\r":
            break
        else:
            pos += 1
    line = text.count("\n", 0, pos) + 1
    raise BadInput(f"the query does not parse: a string is not closed (line {line})")


WRITERS_MARGIN = 5.0  # seconds a waiting writer has left after a read's limit, to take the lock


def time_limit(requested: float | None = None) -> float:
    """The seconds a query may run: ``requested`` (``--timeout``), else KGRDF_QUERY_TIMEOUT (30).
    Never longer than writers wait for the lock (KGRDF_LOCK_TIMEOUT) less WRITERS_MARGIN, so that a
    write issued while a query runs still lands. Raises BadInput for a limit that is not positive."""
    import math

    from kgrdf import lock, settings

    if requested is None:
        seconds = float(settings.get("KGRDF_QUERY_TIMEOUT"))
    elif not (math.isfinite(requested) and requested > 0):
        raise BadInput(f"--timeout {requested:g} must be a positive number of seconds")
    else:
        seconds = requested
    return max(min(seconds, lock.wait_seconds() - WRITERS_MARGIN), 0.1)


def query_text(argument: str) -> str:
    """The query ``kg sparql`` was given: the text itself, or the contents of the file it names (a
    ``.rq`` path, or one short line that is a file), read no further than MAX_BYTES. Raises
    BadInput for a file that cannot be read, is too large or empty."""
    from pathlib import Path

    path = Path(argument)
    try:
        is_file = argument.endswith(".rq") or (len(argument) < 4096 and "\n" not in argument and path.is_file())
    except (OSError, ValueError):
        is_file = False
    if not is_file:
        # One word with no braces or IRI is no query (ASK{} and DESCRIBE<x> are): a path that is not there.
        if argument and not any(c.isspace() or c in "{<" for c in argument):
            try:
                why = (
                    "Is a directory"
                    if path.is_dir()
                    else "not a file"
                    if path.exists()
                    else "No such file or directory"
                )
            except (OSError, ValueError):
                why = "it cannot be looked into"
            raise BadInput(
                f"cannot read the query file {argument}: {why}",
                hint="give a SPARQL query's text, or the path of a .rq file",
            )
        return argument
    from kgrdf import inputs

    # (read as an import file is: a named pipe no one writes to is not waited on, a device is refused)
    data = inputs.read_bounded(path, MAX_BYTES, "the query file", hint="kg sparql runs queries of at most that size")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path} is not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise BadInput(f"the query file {path} is empty", hint="give a SPARQL query's text, or the path of a .rq file")
    return text


def memory_limit() -> int:
    """The bytes of memory a query may take beyond what the reader holds: KGRDF_QUERY_MEMORY MB
    (1024). Raises BadInput for a value that is not a positive whole number."""
    from kgrdf import settings

    return settings.get("KGRDF_QUERY_MEMORY") * 1024 * 1024
