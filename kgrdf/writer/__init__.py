"""Writing: the operations of §6 as changes to the knowledge base, checked before anything is saved.

A :class:`Writer` collects one command's change (quads to delete and to add) while seeing its own
pending changes, so that one command may add an entity and a fact about it (an import does).
Nothing reaches the journal until the command's last check has passed; an exception leaves the
knowledge base as it was.

The operations come in groups, as the CLI groups its commands, each a module over one core:

- staging: the pending change and the reads that see it (Staging, the core every group builds on);
- checks: the SHACL shapes on what a write touches;
- entities: add_entity;
- proposals: propose, and the id, target, hearings and record of a fact it makes;
- lifecycle: confirm, reject, supersede, retime, close_for, expire_proposals;
- organizations: kg org's set_attribute, claim_member, promote_claim, merge_organizations.

A group calls another's operations through ``self`` (a proposal auto-confirms; a correction
proposes its replacement): they are one Writer, which is all of them at once.
"""

from kgrdf.writer.checks import Checks
from kgrdf.writer.entities import Entities
from kgrdf.writer.lifecycle import Lifecycle
from kgrdf.writer.organizations import Organizations
from kgrdf.writer.proposals import Proposals
from kgrdf.writer.staging import DEFAULT_REVIEWER, PACKED, Heard, Outcome, parse_source

__all__ = ["DEFAULT_REVIEWER", "PACKED", "Heard", "Outcome", "Writer", "parse_source"]


class Writer(Organizations, Lifecycle, Proposals, Entities, Checks):
    """One command's change, with every operation of §6 (see the groups above)."""
