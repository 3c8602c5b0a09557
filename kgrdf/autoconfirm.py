"""The auto-confirm rules (§6): which facts are confirmed without a person reviewing them. Pure.

Most facts never reach the daily batch. A fact is confirmed automatically when it is

1. the user's own words, with the quote verified in a genuine user prompt of the transcript;
2. a low-risk fact that names no person, backed by two trusted sources of different kinds (a ledger
   record and a report, say). The user's own kind counts only through rule 1, verified;
3. a person fact read from a structured profile source, for the predicates a profile holds (title,
   timezone: ``kg:ProfilePredicate`` in the ontology).

Everything else stays proposed. A high-risk predicate (owns, approves, rule, status, ...) is never
confirmed by sources alone: only rule 1 confirms it. The rule that applied is named in the fact's
history as the reason; an automatic confirmation never closes the value it would replace (a
person's ``kg confirm`` does).
"""

from dataclasses import dataclass

USER_WORDS = "the user's own words, quote verified in the transcript"
TWO_SOURCES = "two trusted sources of different kinds"
PROFILE = "a structured profile source"


@dataclass(frozen=True)
class Decision:
    rule: str | None  # the rule that confirms, or None: the fact stays proposed
    why_not: str | None = None  # for a person: why no rule applied


CLAIM = "claimed_member"  # hearsay that a person by a name works somewhere (kg org affiliate)


def decide(*, predicate, kinds, source_kinds, names_person: bool, user_verified: bool) -> Decision:
    """Which rule, if any, confirms a fact of ``predicate`` (a schema Predicate) whose sources are
    of ``kinds`` (each kind once: model.Fact.source_kinds). ``source_kinds`` is the schema's kinds,
    each with ``trusted``."""
    if user_verified:
        return Decision(USER_WORDS)
    trusted = {k for k in kinds if k != "user" and getattr(source_kinds.get(k), "trusted", False)}
    if names_person:
        if predicate.profile and "profile" in trusted:
            return Decision(PROFILE)
        also = f" or, for {predicate.key}, a profile source" if predicate.profile else ""
        return Decision(
            None, f"a fact naming a person is confirmed automatically only from the user's verified words{also}"
        )
    if predicate.key == CLAIM:
        return Decision(None, "an unverified claim: sources do not make it so (kg org promote CLAIM ACTOR verifies it)")
    if predicate.high_risk:
        return Decision(None, f"{predicate.key} is high-risk: a person confirms it")
    if len(trusted) >= 2:
        return Decision(TWO_SOURCES)
    return Decision(
        None, f"it has {len(trusted)} trusted source kind{'s' if len(trusted) != 1 else ''} of the two needed"
    )
