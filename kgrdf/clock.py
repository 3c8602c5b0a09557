"""Time: the current instant (settable for tests with KGRDF_NOW), parsing of user dates, and the
rule that recorded (transaction) time never goes backwards.

All times are stored as xsd:dateTime in UTC with second precision.
"""

import os
import re
import zlib
from datetime import UTC, date, datetime, timedelta

from kgrdf.errors import BadInput, Refused

_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")


def now() -> datetime:
    """The current time in UTC, or KGRDF_NOW when it is set (for tests and replays)."""
    fixed = os.environ.get("KGRDF_NOW")
    if fixed:
        return parse_time(fixed, what="KGRDF_NOW")
    return datetime.now(UTC).replace(microsecond=0)


def parse_time(text: str, what: str = "time") -> datetime:
    """Parse ``2026-03-01`` or an ISO 8601 date-time; a time without a zone is taken as UTC.

    Raises BadInput with the accepted forms when the text is not a date, and when it is empty or
    blank: an empty date is never "no date" (leave the option out for that).
    """
    text = text.strip()
    if not text:
        raise BadInput(
            f"{what} is empty; give a date (YYYY-MM-DD or an ISO 8601 time like 2026-03-01T09:30:00Z) or leave it out"
        )
    try:
        if _DATE.match(text):
            parsed = datetime.combine(date.fromisoformat(text), datetime.min.time())
        else:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(
            f"{what} {text!r} is not a date; use YYYY-MM-DD or an ISO 8601 time like 2026-03-01T09:30:00Z"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC).replace(microsecond=0)
    except OverflowError:  # a zone pushing it past year 1 or 9999
        raise BadInput(f"{what} {text!r} is outside the years 1 to 9999 in UTC") from None


def parse_optional(text: str | None, what: str) -> datetime | None:
    """A date option: None when it was not given, else :func:`parse_time` (which refuses an empty
    or blank one). Never test a date option for truth: ``--valid-from ''`` is given, and wrong."""
    return None if text is None else parse_time(text, what)


def parse_date(text: str, what: str = "date") -> date:
    """Parse a calendar date ``YYYY-MM-DD``."""
    text = text.strip()
    if not text:
        raise BadInput(f"{what} is empty; give a date (YYYY-MM-DD)")
    if not _DATE.match(text):
        raise BadInput(f"{what} {text!r} is not a date; use YYYY-MM-DD")
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise BadInput(f"{what} {text!r} is not a date; use YYYY-MM-DD") from None


def iso(moment: datetime) -> str:
    """The xsd:dateTime lexical form we store: ``2026-03-01T09:30:00Z``."""
    utc = moment.astimezone(UTC)
    return f"{utc.year:04d}-" + utc.strftime("%m-%dT%H:%M:%SZ")  # %Y drops a small year's zeros


# --- recorded time never goes backwards ---------------------------------------------------------------

_TIME_HEADER = b'H time "'
_HEAD = 4096  # bytes read at a time from a patch's start: its header is a few lines


def shown(time: str) -> str:
    """A time as a line of text shows it: the date alone at midnight UTC (2025-06-01), else the
    whole time (2025-06-01T08:30:00Z): a time of day cut off would read as another day."""
    return time[:10] if time[10:] in ("", "T00:00:00Z") else time


def last_recorded(journal) -> str | None:
    """The time of the journal's last transaction (``H time``), or None for an empty journal: the
    header of the last patch of each journal (this replica's and the private one). A patch has one
    header, at its start: a write reads its first lines, whatever the size of the patch (an import's
    is hundreds of megabytes) or of the knowledge base."""
    last = [(stream, stream.last()) for stream in (journal.local, journal.shared)]
    times = [t for t in (_time_in(stream, path) for stream, path in last if path is not None) if t]
    return max(times) if times else None


def _time_in(stream, path) -> str | None:
    """The value of the ``H time`` header line of a patch: among the header lines that start it,
    before ``TX``."""
    try:
        with stream.open(path) as patch:
            head = b"\n"
            while True:
                piece = patch.read(_HEAD)
                head += piece
                at = head.find(b"\n" + _TIME_HEADER)
                if at >= 0:
                    value = head[at + 1 + len(_TIME_HEADER) :]
                    if b'"' in value or not piece:
                        return value.split(b'"', 1)[0].decode("ascii", "replace")
                    continue  # the value goes on in the next piece
                if not piece or b"\nTX ." in head:
                    return None
    except (OSError, EOFError, zlib.error):  # gone, or a gzipped patch cut short or damaged
        return None


def for_write(journal, dry_run: bool = False) -> datetime:
    """The time a write records: now, which must not be before the journal's last transaction
    (recorded time never goes backwards: a later transaction recorded at an earlier time would make
    --known-at answer that the knowledge base held what it learned only after). Raises Refused. A
    dry run is refused too: it answers for the knowledge base as it stands, which holds what was
    learned after that time (what would expire, what an import would find), so it cannot answer
    for a time before its last change."""
    moment = now()
    last = last_recorded(journal)
    if last is not None and iso(moment) < last:
        fixed = os.environ.get("KGRDF_NOW")
        where = f"KGRDF_NOW ({fixed.strip()})" if fixed else f"the system clock ({iso(moment)})"
        why = (
            "a dry run answers for the knowledge base as it stands, which holds what was learned after it, "
            "not as it stood then"
            if dry_run
            else "recorded time never goes backwards, so nothing is written"
        )
        raise Refused(
            f"{where} is before the last recorded time {last}: {why}",
            hint=f"set KGRDF_NOW to {last} or later, or unset it"
            if fixed
            else "set the system clock right, or wait until it passes that time",
        )
    return moment


def days_before(moment: datetime, days: int) -> datetime:
    """``days`` days before ``moment``, or the first moment there is (in year 1) where that would
    be earlier: a clock set near year 1 counts back to it, never past it (an OverflowError)."""
    try:
        return moment - timedelta(days=days)
    except OverflowError:
        return datetime.min.replace(tzinfo=moment.tzinfo)
