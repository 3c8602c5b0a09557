"""The facts a write stages, kept by what a write looks them up by, so that the work of a record
stays the same however many came before it in the same write (an import of 100k records)."""

from kgrdf import model


def rival_key(schema, predicate: str, target) -> str | None:
    """What values of ``predicate`` rival by: the key of a free-text attribute (``KEY: VALUE``),
    None for any other predicate (every value of a single-valued one rivals every other)."""
    found = schema.predicate_by_iri(predicate)
    return model.attribute_key(target.value) if found is not None and found.key == "attribute" else None


class PendingFacts:
    """Where a write's staged facts are, by IRI: by their subject and predicate, by those and their
    object's or value's key (model.Fact.value_key: a value heard again among 20k siblings is found
    by its key, not by reading every sibling), and, for those that stand confirmed and current, by
    what they rival by (rival_key: the values a confirmation replaces). A fact's subject,
    predicate and target never change once staged; its status does, and each change is noted."""

    def __init__(self):
        self._by_pair: dict[tuple[str, str], dict[str, None]] = {}
        self._by_value: dict[tuple[str, str, str], dict[str, None]] = {}
        self._confirmed: dict[tuple[str, str, str | None], dict[str, None]] = {}

    def note(self, fact: model.Fact, new: bool, schema) -> None:
        """Note a fact staged (``new``: for the first time) or changed since."""
        if new:
            self._by_pair.setdefault((fact.subject, fact.predicate), {})[fact.iri] = None
            self._by_value.setdefault((fact.subject, fact.predicate, fact.value_key()), {})[fact.iri] = None
        rivals = _rivals_of(fact, schema)
        if fact.status == "confirmed" and fact.current:
            self._confirmed.setdefault(rivals, {})[fact.iri] = None
        elif rivals in self._confirmed:  # (no bucket made for a fact that stands proposed)
            self._confirmed[rivals].pop(fact.iri, None)

    def drop(self, fact: model.Fact, schema) -> None:
        """A fact taken out of the write."""
        self._by_pair.get((fact.subject, fact.predicate), {}).pop(fact.iri, None)
        self._by_value.get((fact.subject, fact.predicate, fact.value_key()), {}).pop(fact.iri, None)
        self._confirmed.get(_rivals_of(fact, schema), {}).pop(fact.iri, None)

    def with_pair(self, subject: str, predicate: str, key: str | None = None):
        """The IRIs of the staged facts with this subject and predicate (and, with ``key``, this
        key of their object or value), in the order first staged."""
        if key is None:
            return self._by_pair.get((subject, predicate), ())
        return self._by_value.get((subject, predicate, key), ())

    def confirmed(self, subject: str, predicate: str, rival: str | None):
        """The IRIs of the staged facts with this subject and predicate that stand confirmed and
        current, of those that rival by ``rival`` (rival_key)."""
        return self._confirmed.get((subject, predicate, rival), ())


def _rivals_of(fact: model.Fact, schema) -> tuple[str, str, str | None]:
    return fact.subject, fact.predicate, rival_key(schema, fact.predicate, fact.target)
