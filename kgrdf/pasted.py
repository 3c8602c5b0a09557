"""Command lines printed for a person to paste (a refusal's way out, a note): each names the
knowledge base and perspective the command ran on where a line without them reaches another one
(kg forget X pasted without the --kb it ran with would forget X in the default knowledge base).

The command line says which once it has opened the knowledge base (``here``); lines made without it,
by a server or the console, name none: their readers are programs and pages, not a shell."""

import shlex

_WORDS: tuple[str, ...] = ()


def here(words) -> None:
    """The words that name this process's knowledge base and perspective (KnowledgeBase.command_words)."""
    global _WORDS
    _WORDS = tuple(words)


def kg(*words: str) -> str:
    """``kg WORDS`` as a shell reads them back, naming the knowledge base (a --perspective the words
    give already is theirs)."""
    extra = list(_WORDS)
    if "--perspective" in words and "--perspective" in extra:
        at = extra.index("--perspective")
        del extra[at : at + 2]
    return shlex.join(["kg", *words, *extra])
