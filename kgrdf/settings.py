"""The settings of curation (§6, §8) and the bounds of what is read, each a number a site may change
with an environment variable.

    KGRDF_PROPOSAL_DAYS    30   a proposal not observed again for this long expires
    KGRDF_RETENTION_DAYS  365   a person fact not observed or confirmed again for this long is deleted by kg expire
    KGRDF_STALE_DAYS      180   lint calls a confirmed fact stale when not observed again for this long
    KGRDF_BATCH_GROUPS     10   groups in one daily batch
    KGRDF_GROUP_FACTS       8   facts in one lettered part of a group (at most 26)
    KGRDF_BATCH_FACTS      40   facts in one daily batch
    KGRDF_FOLD_UNDER        5   groups smaller than this fold into one group per axis
    KGRDF_CONTEXT_BUDGET 1500   tokens in a context pack unless --budget says otherwise
    KGRDF_QUERY_TIMEOUT    30   seconds a kg sparql query may run unless --timeout says otherwise
    KGRDF_QUERY_MEMORY   1024   MB of memory a kg sparql query may take
    KGRDF_MAX_TEXT      65536   characters in one text field (a value, an import record's field, a message)
    KGRDF_MAX_LINE   16777216   bytes in one line of an import or a transcript
    KGRDF_MAX_IMPORT 536870912  bytes in an import file
    KGRDF_MAX_TRANSCRIPT 268435456  bytes in a transcript

The other settings are read where they act: KGRDF_LOCK_TIMEOUT (kgrdf.lock: seconds, a fraction
allowed), KGRDF_NOW (kgrdf.clock), KGRDF_HOME (kgrdf.kb), KGRDF_PERSPECTIVE and KGRDF_DEBUG
(kgrdf.cli). README's settings table lists every one; tests/test_cli_contract.py fails when the code
reads a KGRDF_ name the table does not list, or the table gives a default the code does not use.
"""

import os

from kgrdf.errors import BadInput

DEFAULTS = {
    "KGRDF_PROPOSAL_DAYS": 30,
    "KGRDF_RETENTION_DAYS": 365,
    "KGRDF_STALE_DAYS": 180,
    "KGRDF_BATCH_GROUPS": 10,
    "KGRDF_GROUP_FACTS": 8,
    "KGRDF_BATCH_FACTS": 40,
    "KGRDF_FOLD_UNDER": 5,
    "KGRDF_CONTEXT_BUDGET": 1500,
    "KGRDF_QUERY_TIMEOUT": 30,
    "KGRDF_QUERY_MEMORY": 1024,
    "KGRDF_MAX_TEXT": 65_536,
    "KGRDF_MAX_LINE": 16 * 1024 * 1024,
    "KGRDF_MAX_IMPORT": 512 * 1024 * 1024,
    "KGRDF_MAX_TRANSCRIPT": 256 * 1024 * 1024,
}
_CENTURY = 36_525  # days: a date further back than that is before any record
LIMITS = {
    "KGRDF_GROUP_FACTS": 26,  # one letter a part
    "KGRDF_PROPOSAL_DAYS": _CENTURY,
    "KGRDF_RETENTION_DAYS": _CENTURY,
    "KGRDF_STALE_DAYS": _CENTURY,
    **{name: 1 << 40 for name in ("KGRDF_MAX_TEXT", "KGRDF_MAX_LINE", "KGRDF_MAX_IMPORT", "KGRDF_MAX_TRANSCRIPT")},
    "KGRDF_QUERY_MEMORY": 1 << 30,  # MB: a petabyte (past 2^64 bytes, the system's limit took none)
}


def get(name: str) -> int:
    """The setting ``name``: its environment variable when set, else the default. Raises BadInput
    for a value that is not a positive whole number (or above its limit)."""
    text = os.environ.get(name)
    if text is None or not text.strip():
        return DEFAULTS[name]
    try:
        value = int(text)
    except ValueError:
        value = 0
    limit = LIMITS.get(name)
    if value < 1 or (limit is not None and value > limit):
        bound = f"between 1 and {limit}" if limit else "a whole number of at least 1"
        raise BadInput(f"{name}={text!r} must be {bound}")
    return value
