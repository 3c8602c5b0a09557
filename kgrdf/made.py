"""What this process made that stays when it ends: a journal transaction, a knowledge base, a token,
a remote. Noted where each is made, so that when the answer to a command is lost (its standard
output took nothing: kgrdf.cli), the one line that says so also says what the command made
already, and a program does not make it twice. Nothing else reads it."""

_MADE: list[str] = []


def note(what: str) -> None:
    """Note one thing made (a few words: "transaction 12 is in the journal")."""
    _MADE.append(what)


def notes() -> list[str]:
    """What this process made, in order."""
    return list(_MADE)
