"""The user's own words: is a quote in a genuine user prompt of an agent session's transcript? (§6)

A transcript is JSON lines, one record a line, in one of the common agent-session forms:

- ``{"type": "user", "message": {"role": "user", "content": ...}}`` (a session log that wraps each
  message in a record with a type);
- ``{"role": "user", "content": ...}`` (a plain chat message list);
- ``{"type": "response_item", "payload": {"type": "message", "role": "user", "content": ...}}``.

``content`` is a string or a list of parts. Only text parts of user messages are prompts. Tool
results travel in user records too (parts of type ``tool_result``, records with ``toolUseResult``)
and are not the user's words; neither are assistant, system or tool turns, records marked as meta
(text the agent's harness adds), side-chain records (a sub-agent's prompts, written by an agent),
or a compaction's summary (written by a model, in a user record, to carry a session on). Within a
user's text, the blocks a harness wraps in its own tags are not the user's words either: a command's
output replayed (``<local-command-stdout>``, ``<bash-stdout>``, ...), a reminder or a hook's output,
the instructions or environment an agent is started with. A block runs to the last closing tag of
its name, and one left open to the text's end: output may hold a closing tag of its own.
Matching ignores case and runs of spaces. Pure apart from reading the file.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from kgrdf.errors import BadInput
from kgrdf.model import normalize

MIN_QUOTE = 8  # characters, after folding spaces: shorter quotes would match almost any prompt
_TEXT_PARTS = {"text", "input_text"}
# Records a harness writes in the user's place, by the flag it marks them with
_NOT_THE_USER = ("isMeta", "isSidechain", "isCompactSummary", "isVisibleInTranscriptOnly")
# The tags a harness wraps its own text in, inside a user message
_HARNESS_TAGS = (
    "local-command-stdout",
    "local-command-stderr",
    "bash-stdout",
    "bash-stderr",
    "command-stdout",
    "command-stderr",
    "system-reminder",
    "user-prompt-submit-hook",
    "environment_context",
    "user_instructions",
    "ide_selection",  # an editor's selection, open file or diagnostics: a file's words, not the user's
    "ide_opened_file",
    "ide_diagnostics",
)
_HARNESS_OPEN = re.compile(r"<(" + "|".join(map(re.escape, _HARNESS_TAGS)) + r")(?:\s[^>]*)?>", re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    verified: bool
    reason: str  # why, in words for the person running the command


def _text(content) -> list[str]:
    """The text of a message's content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return [content]
    texts = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") in _TEXT_PARTS and isinstance(part.get("text"), str):
                texts.append(part["text"])
    return texts


def prompts(record: dict) -> list[str]:
    """The user-prompt texts one transcript record carries (none for any other kind of record)."""
    if not isinstance(record, dict) or any(record.get(flag) for flag in _NOT_THE_USER):
        return []
    if "toolUseResult" in record:
        return []
    message = record
    if record.get("type") == "user" and isinstance(record.get("message"), dict):
        message = record["message"]
    elif record.get("type") == "response_item" and isinstance(record.get("payload"), dict):
        message = record["payload"]
        if message.get("type") != "message":
            return []
    elif "type" in record and record.get("type") not in ("user", "message"):
        return []
    if message.get("role") != "user":
        return []
    return [piece for text in _text(message.get("content")) for piece in _outside_harness_blocks(text) if piece.strip()]


def _outside_harness_blocks(text: str) -> list[str]:
    """The pieces of a user's text between the blocks a harness wrapped in its tags: each a prompt
    of its own, so that no quote joins words from both sides of one. A block runs to the last
    closing tag of its name (to the text's end without one): what it wraps is a command's output,
    which anyone may have written, a closing tag and words after it included."""
    pieces, start = [], 0
    while (block := _HARNESS_OPEN.search(text, start)) is not None:
        pieces.append(text[start : block.start()])
        closing = re.compile(rf"</{re.escape(block.group(1))}\s*>", re.IGNORECASE)
        ends = [match.end() for match in closing.finditer(text, block.end())]
        start = ends[-1] if ends else len(text)
    pieces.append(text[start:])
    return pieces


def read_prompts(path: Path) -> list[str]:
    """Every user prompt of the transcript at ``path`` (at most KGRDF_MAX_TRANSCRIPT bytes). Raises
    BadInput when it cannot be read, is too large or holds no JSON record at all; a line that does
    not parse (a torn last line) or is longer than KGRDF_MAX_LINE is skipped."""
    from kgrdf import inputs, settings

    path = Path(path)
    data = inputs.read(path, "KGRDF_MAX_TRANSCRIPT", "the transcript")
    line_limit = settings.get("KGRDF_MAX_LINE")
    records, out = 0, []
    for _number, line in inputs.lines(data):
        line = line.strip()
        if not line or len(line) > line_limit:
            continue
        try:
            record = inputs.parse_json(line.decode("utf-8", errors="replace"))
        except ValueError:
            continue
        records += 1
        out += prompts(record)
    if not records:
        raise BadInput(f"{path} is not a transcript: no line of it is a JSON record")
    return out


def check_quote(quote: str) -> str:
    """The quote as it is compared; raises BadInput when it is too short to mean anything."""
    folded = normalize(quote or "")
    if len(folded) < MIN_QUOTE:
        raise BadInput(f"--quote must be the user's words, at least {MIN_QUOTE} characters; got {quote!r}")
    return folded


def verify(quote: str, path: Path) -> Verdict:
    """Whether ``quote`` appears in a genuine user prompt of the transcript at ``path``."""
    needle = check_quote(quote)
    found = read_prompts(path)
    if not found:
        return Verdict(
            False, f"{Path(path).name} holds no user prompt (only assistant turns, tool results or meta records)"
        )
    if any(needle in normalize(prompt) for prompt in found):
        return Verdict(True, f"the quote is in a user prompt of {Path(path).name}")
    return Verdict(
        False,
        f"the quote is not in any of the {len(found)} user prompts of {Path(path).name}"
        " (assistant turns and tool results do not count)",
    )


def user_words(quote: str | None, path) -> tuple:
    """The user's words as a write takes them: (a user source carrying the quote, the verdict of
    :func:`verify`). Raises BadInput when the quote or the transcript is missing."""
    from kgrdf import inputs
    from kgrdf.model import Source

    if not quote or path is None:
        raise BadInput("the user's words need the quote (--quote TEXT) and the session (--transcript PATH)")
    quote = inputs.prose(quote, "the quote")  # (kept in the source, as any text is: checked as one)
    verdict = verify(quote, Path(path))
    ref = inputs.text(f"transcript:{Path(path).resolve()}", "the transcript's path")
    return Source("user", ref, quote.strip()), verdict
