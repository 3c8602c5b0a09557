"""Time: the current instant (settable for tests with KGRDF_NOW) and parsing of user dates.

All times are stored as xsd:dateTime in UTC with second precision.
"""

import os
import re
from datetime import date, datetime, timezone

from kgrdf.errors import BadInput

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def now() -> datetime:
    """The current time in UTC, or KGRDF_NOW when it is set (for tests and replays)."""
    fixed = os.environ.get("KGRDF_NOW")
    if fixed:
        return parse_time(fixed, what="KGRDF_NOW")
    return datetime.now(timezone.utc).replace(microsecond=0)


def parse_time(text: str, what: str = "time") -> datetime:
    """Parse ``2026-03-01`` or an ISO 8601 date-time; a time without a zone is taken as UTC.

    Raises BadInput with the accepted forms when the text is not a date.
    """
    text = text.strip()
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
        parsed = parsed.replace(tzinfo=timezone.utc)
    try:
        return parsed.astimezone(timezone.utc).replace(microsecond=0)
    except OverflowError:  # a zone pushing it past year 1 or 9999
        raise BadInput(f"{what} {text!r} is outside the years 1 to 9999 in UTC") from None


def parse_date(text: str, what: str = "date") -> date:
    """Parse a calendar date ``YYYY-MM-DD``."""
    text = text.strip()
    if not _DATE.match(text):
        raise BadInput(f"{what} {text!r} is not a date; use YYYY-MM-DD")
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise BadInput(f"{what} {text!r} is not a date; use YYYY-MM-DD") from None


def iso(moment: datetime) -> str:
    """The xsd:dateTime lexical form we store: ``2026-03-01T09:30:00Z``."""
    utc = moment.astimezone(timezone.utc)
    return f"{utc.year:04d}-" + utc.strftime("%m-%dT%H:%M:%SZ")  # %Y drops a small year's zeros
