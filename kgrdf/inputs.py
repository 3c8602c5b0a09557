"""What comes in from outside, checked before anything uses it (§11: every bad input gets one
line and writes nothing): text that is Unicode and of a bounded size, JSON of the expected shape,
and files read no further than their bound.

The bounds are settings (kgrdf.settings): KGRDF_MAX_TEXT characters in one text field,
KGRDF_MAX_LINE bytes in one line of an import or a transcript, KGRDF_MAX_IMPORT and
KGRDF_MAX_TRANSCRIPT bytes in those files.
"""

import json
import os
import re
import stat
import sys
from pathlib import Path

from kgrdf import settings, vocab
from kgrdf.errors import BadInput

_JSON_TYPES = {
    bool: "true or false",
    int: "a number",
    float: "a number",
    str: "text",
    list: "a list",
    dict: "an object",
    type(None): "null",
}


def once(pairs) -> dict:
    """A request's parameters (name, value pairs) as a dict, each given once: one given twice is
    refused, where taking either would answer a question the asker may not have meant (a page that
    read the first as its audience, and the server the last)."""
    return _given_once(pairs, "parameter", BadInput)


def _given_once(pairs, what: str, error) -> dict:
    """Name, value pairs as a dict; a name given twice raises ``error``, naming it as a ``what``."""
    out = {}
    for name, value in pairs:
        if name in out:
            raise error(f"the {what} {name!r} is given twice")
        out[name] = value
    return out


def shown(value) -> str:
    """A short description of a JSON value for a message: its kind, and the value when it is small
    (never the repr of a big or deeply nested one)."""
    kind = _JSON_TYPES.get(type(value), type(value).__name__)
    if isinstance(value, (bool, int, float)) and len(str(value)) <= 40:
        return f"{kind} ({json.dumps(value)})"
    return kind


def text(value, what: str, limit: int | None = None) -> str:
    """``value`` when it is text the knowledge base can hold: a str of valid Unicode (no lone
    surrogate, which is what a byte that is not UTF-8 becomes in an argument) of at most
    KGRDF_MAX_TEXT characters (``limit``, when the caller read it once for many texts), in NFC
    (a name typed with a combining accent is the same name: kgrdf.model.nfc). Raises BadInput
    naming ``what``."""
    if not isinstance(value, str):
        raise BadInput(f"{what} must be text, not {shown(value)}")
    limit = limit or settings.get("KGRDF_MAX_TEXT")
    if len(value) > limit:
        raise BadInput(f"{what} is {len(value)} characters long; the most is {limit}", hint="KGRDF_MAX_TEXT sets it")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadInput(
            f"{what} is not UTF-8 text ({value[exc.start]!r} at character {exc.start + 1})",
            hint="a byte that is not UTF-8 was given; pass the text in UTF-8",
        ) from None
    if value.isascii():
        return value
    found = NONCHARACTERS.search(value)
    if found is not None:
        raise BadInput(
            f"{what} holds U+{ord(found.group()):04X} at character {found.start() + 1}, a Unicode noncharacter, "
            "which stands for no character",
            hint="leave it out",
        )
    import unicodedata

    return unicodedata.normalize("NFC", value)


# Unicode's noncharacters (U+FDD0-U+FDEF, and the last two code points of every plane): valid in
# Python and UTF-8, but they stand for no character. Oxigraph writes U+FFFE and U+FFFF as \uFFFE and
# \uFFFF, which Raptor's Turtle and N-Quads readers refuse: a value holding one made every export
# unreadable to it.
NONCHARACTERS = re.compile(
    "[\ufdd0-\ufdef"
    + "".join(f"{chr(plane * 0x10000 + 0xFFFE)}{chr(plane * 0x10000 + 0xFFFF)}" for plane in range(17))
    + "]"
)


def prose(value, what: str, limit: int | None = None) -> str:
    """Free text that is kept and shown to people (a value, a summary, a reason, a schema's label):
    :func:`text` holding no control character but tabs and newlines (CONTROLS), its line ends made
    newlines (text pasted from Windows or a mail ends its lines with CR LF, and is no attack).
    Raises BadInput."""
    return refuse_controls(newlines(text(value, what, limit)), what)


def newlines(value: str) -> str:
    """``value`` with each line end (CR LF, or a lone CR) a newline."""
    return value.replace("\r\n", "\n").replace("\r", "\n") if "\r" in value else value


# The control characters free text may not hold: C0 but tab and newline, DEL, and C1. A terminal
# obeys them (a carriage return or an escape sequence rewrites the line a reader sees), so a reason
# could show as something it does not say.
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def refuse_controls(value: str, what: str) -> str:
    """``value`` when it holds no control character (CONTROLS). Raises BadInput naming the first."""
    found = CONTROLS.search(value)
    if found is not None:
        raise BadInput(
            f"{what} holds a control character (U+{ord(found.group()):04X}) at character {found.start() + 1}; "
            "use visible characters, tabs and newlines only"
        )
    return value


# Characters that hide what a name says: bidirectional controls (U+202E RIGHT-TO-LEFT OVERRIDE turns
# "Dana" around on screen), and letters and marks that show as nothing.
_BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
_BLANK = {0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180E, 0x180F, 0x2800, 0x3164, 0xFFA0}
_JOINERS = {0x200C, 0x200D}  # zero-width (non-)joiner: part of spelling in some scripts and of emoji
_NO_JOINERS = ("LATIN", "GREEK", "CYRILLIC", "DIGIT")  # scripts whose words never need one


def label(value, what: str) -> str:
    """A name or alias: text (as :func:`text`) without a character that hides what it says:
    control, format or separator characters (Unicode Cc, Cf, Cs, Zl, Zp) other than spaces, which
    a label folds into one; bidirectional controls; letters and marks that show as nothing (Hangul
    fillers, the braille blank). A zero-width joiner or non-joiner is kept where a script spells
    with it (between two letters of, say, Persian or Devanagari) or joins an emoji; between two
    Latin letters it is a hidden difference, refused. Raises BadInput naming the character."""
    import unicodedata

    value = text(value, what)
    for index, char in enumerate(value):
        code, category = ord(char), unicodedata.category(char)
        if char.isspace():
            continue  # folded into one space (model.clean_label)
        if code in _BIDI:
            kind = "a bidirectional control character, which reorders what is shown"
        elif code in _JOINERS:
            if _joins(value, index):
                continue
            kind = "an invisible joiner between characters that never need one"
        elif code in _BLANK:
            kind = "a character that shows as nothing"
        elif category in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            kind = {"Cc": "a control character", "Cf": "an invisible format character", "Cs": "a lone surrogate"}.get(
                category, "a separator"
            )
        else:
            continue
        name = unicodedata.name(char, "")
        raise BadInput(
            f"{what} {value[:60]!r} holds {kind} (U+{code:04X}{' ' + name if name else ''}) at character "
            f"{index + 1}; a name must show all it says",
            hint="type the name again without it",
        )
    return value


def _joins(value: str, index: int) -> bool:
    """Whether a zero-width joiner or non-joiner at ``index`` sits where a script or an emoji
    needs it: between two letters or marks of a script that spells with it, or two symbols."""
    import unicodedata

    if index == 0 or index == len(value) - 1:
        return False
    before, after = value[index - 1], value[index + 1]
    kinds = unicodedata.category(before)[0], unicodedata.category(after)[0]
    if kinds == ("S", "S"):
        return True  # an emoji sequence (with a skin tone, a modifier symbol)
    if all(kind in ("L", "M") for kind in kinds):
        scripts = {unicodedata.name(c, "?").split(" ")[0] for c in (before, after)}
        return not scripts & set(_NO_JOINERS)
    return False


def texts(value, what: str, limit: int | None = None) -> list[str]:
    """A list of texts (aliases): each checked as :func:`text`. Raises BadInput."""
    if not isinstance(value, list):
        raise BadInput(f"{what} must be a list of texts, not {shown(value)}")
    return [text(item, f"each of {what}", limit) for item in value]


def parse_json(line: str | bytes, unique_keys: bool = False):
    """A JSON document; raises ValueError when it does not parse or nests too deep to read, and
    (``unique_keys``) when an object gives a key twice, which json would read as its last value."""
    try:
        if unique_keys and isinstance(line, str):
            return _UNIQUE_KEYS.decode(line)  # (one decoder for every line of an import)
        return json.loads(line, object_pairs_hook=_unique if unique_keys else None)
    except RecursionError:
        raise ValueError("it nests too deep") from None
    except ValueError as exc:
        if "integer string conversion" not in str(exc):
            raise
        # (Python's own words advise a call to make in Python, which no user of kg can)
        raise ValueError(f"a number has more than {sys.get_int_max_str_digits()} digits") from None


def _unique(pairs: list) -> dict:
    return _given_once(pairs, "key", ValueError)


_UNIQUE_KEYS = json.JSONDecoder(object_pairs_hook=_unique)


BOM = b"\xef\xbb\xbf"  # the UTF-8 byte-order mark some editors put first: no part of the text


def read(path: Path, setting: str, what: str) -> bytes:
    """The bytes of the file at ``path``, at most the setting's number of them, without a UTF-8
    byte-order mark at its start (every file kg reads is UTF-8 text). A regular file or a pipe
    (standard input) only: a device or a folder would be read forever or not at all.
    Raises BadInput when it cannot be read, is not a file, or is larger than its bound."""
    return read_bounded(path, settings.get(setting), what, hint=f"split it, or raise {setting}")


def read_bounded(path: Path, limit: int, what: str, hint: str | None = None) -> bytes:
    """:func:`read` with its bound in bytes given (``hint`` says what to do about a larger file).
    A named pipe with no writer reads as empty, never waited on."""
    path = Path(path)
    if "\x00" in str(path):
        raise BadInput(f"{what} {str(path)!r} holds a NUL character, which no path can")
    try:
        # A named pipe with no writer would block the open forever: open without waiting, then read
        # as usual (such a pipe reads as empty).
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(descriptor, True)
        with os.fdopen(descriptor, "rb") as stream:
            mode = os.fstat(stream.fileno()).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError
            if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
                raise BadInput(f"{what} {path} is not a file", hint="give the path of a file")
            if stat.S_ISREG(mode) and os.fstat(stream.fileno()).st_size > limit + len(BOM):
                raise _too_large(what, path, limit, hint)
            data = _read_at_most(stream, limit + len(BOM) + 1)
    except IsADirectoryError:
        raise BadInput(f"{what} {path} is a folder", hint="give the path of a file") from None
    except OSError as exc:
        raise BadInput(f"cannot read {what} {path}: {exc.strerror}") from None
    data = data.removeprefix(BOM)
    if len(data) > limit:
        raise _too_large(what, path, limit, hint)
    return data


def _read_at_most(stream, size: int) -> bytes:
    """At most ``size`` bytes of ``stream``, read in pieces (one read of ``size`` would ask for all
    that memory at once, whatever the stream holds)."""
    pieces, left = [], size
    while left > 0:
        piece = stream.read(min(left, 1 << 20))
        if not piece:
            break
        pieces.append(piece)
        left -= len(piece)
    return b"".join(pieces)


def _too_large(what: str, path: Path, limit: int, hint: str | None) -> BadInput:
    return BadInput(f"{what} {path} is larger than {limit} bytes", hint=hint)


def lines(data: bytes):
    """(number, line) for each line of a JSON-lines file: split at newlines only, as they were
    written (a JSON string may hold U+2028 or a form feed, which str.splitlines would split at)."""
    for number, line in enumerate(data.split(b"\n"), start=1):
        yield number, line.rstrip(b"\r")


def standard_input(what: str) -> str:
    """A text given on standard input (a message), checked as :func:`text`, without a byte-order
    mark at its start (offsets into it count from its first character). Raises BadInput."""
    import sys

    limit = settings.get("KGRDF_MAX_TEXT")
    most = 4 * limit + len(BOM)  # a character is at most four bytes in UTF-8
    data = _read_at_most(sys.stdin.buffer, most + 1)
    if len(data) > most:  # read no further: its length is not known, only that it is too long
        raise BadInput(
            f"{what} on standard input is more than {limit} characters long; the most is {limit}",
            hint="KGRDF_MAX_TEXT sets it",
        )
    try:
        return text(data.removeprefix(BOM).decode("utf-8"), what)
    except UnicodeDecodeError:
        raise BadInput(f"{what} on standard input is not UTF-8 text") from None


def perspective(name) -> str:
    """A perspective's name as given (--perspective, a token's, a new knowledge base's): 1 to 63
    lower-case letters, digits, - or _, the first a letter or digit. Raises BadInput."""
    if not isinstance(name, str) or not vocab.PERSPECTIVE_PATTERN.match(name):
        raise BadInput(
            f"perspective {name!r} must be lower-case letters, digits, - or _ (1 to 63 of them, the first a "
            "letter or digit)"
        )
    return name
