"""Reading the knowledge base: every answer comes from a named query in ``queries/``.

A :class:`Session` wraps an index that reflects the whole journal. Its methods return plain
values (dicts and lists) that the CLI renders for a person or prints as JSON.

The reads come in groups, each a module over one core:

- reading: the named queries, the schema read once, and the audience a read is for (Reading);
- entities: an entity, which one a name means, search, the perspectives;
- organizations: the perspective's own, quiet customers, relations, the names a message mentions;
- facts: a fact and where it was heard, a subject's facts, lookup, neighbors, history, stats;
- raw: raw SPARQL and export.

A group calls another's reads through ``self``: they are one Session, which is all of them at
once (and a write's kgrdf.writer.Staging is one too, seeing its own pending change first).
"""

from kgrdf.session.entities import EntityReads
from kgrdf.session.facts import FactReads
from kgrdf.session.organizations import OrganizationReads
from kgrdf.session.raw import RawReads
from kgrdf.session.reading import MAX_HOPS, UNKNOWN_AUDIENCE, no_fact

__all__ = ["MAX_HOPS", "UNKNOWN_AUDIENCE", "Session", "no_fact"]


class Session(RawReads, OrganizationReads, FactReads, EntityReads):
    """Every read of §6 on one index, for one audience (see the groups above)."""
