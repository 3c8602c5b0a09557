"""Audiences (§9): who could hear an assertion, and who may be told it.

Every time a fact is heard, that hearing carries the audience it was heard in:

- ``public``: anyone;
- ``workspace:W``: the members of a workspace;
- ``channel:C``: the members of a channel;
- ``dm:A,B``: the people of a private conversation (their actor ids, in order);
- ``owner``: the knowledge base owner alone, the default of a write that names no audience.

A read names the audience it will be shown in and gets only what every member of that audience
could have heard: a public assertion, one heard in that very audience, or one heard in a private
conversation whose people include all of the readers'. Where membership is not known (is this
channel in that workspace?) the answer is no: an unknown audience fails closed. The owner, who
keeps the knowledge base, may hear everything; a read that names no audience is the owner's.

A fact may be told to an audience that may hear one of its hearings, and is shown with those
hearings alone (their sources, speakers, messages); an entity exists for an audience when a fact it
may be told names it, or it is the perspective's own organization.
"""

import re

from kgrdf.errors import BadInput

PUBLIC = "public"
OWNER = "owner"
KINDS = ("public", "workspace:W", "channel:C", "dm:A,B", "owner")
_NAME = re.compile(r"^[\w.@#/-]+\Z")


MAX_CHARS = 4096  # an audience longer is no conversation's: refused before it is read, or said back


def parse(text: str) -> str:
    """The canonical form of an audience. Raises BadInput, saying what an audience looks like."""
    value = (text or "").strip()
    if len(value) > MAX_CHARS:
        raise BadInput(f"an audience of {len(value)} characters is not one (at most {MAX_CHARS})")
    if value.lower() in (PUBLIC, OWNER):
        return value.lower()
    kind, _, rest = value.partition(":")
    kind = kind.strip().lower()
    if kind in ("workspace", "channel") and _NAME.match(rest.strip()):
        return f"{kind}:{rest.strip()}"
    if kind == "dm":
        people = sorted({p.strip() for p in rest.split(",") if p.strip()})
        if people and all(_NAME.match(p) for p in people):
            return "dm:" + ",".join(people)
    raise BadInput(f"{text!r} is not an audience", hint="one of " + ", ".join(KINDS))


def may_hear(heard_in: str | None, shown_to: str) -> bool:
    """Whether an assertion heard in ``heard_in`` may be told to ``shown_to`` (both canonical).
    An assertion with no recorded audience is the owner's."""
    heard_in = heard_in or OWNER
    if shown_to == OWNER or heard_in == PUBLIC or heard_in == shown_to:
        return True
    if heard_in.startswith("dm:") and shown_to.startswith("dm:"):
        return set(shown_to[3:].split(",")) <= set(heard_in[3:].split(","))
    return False


def may_hear_any(heard_in, shown_to: str) -> bool:
    """Whether a fact heard in each of ``heard_in`` (its hearings' audiences; None: the owner's) may
    be told to ``shown_to``: when it may hear one of them."""
    return any(may_hear(one, shown_to) for one in heard_in)
