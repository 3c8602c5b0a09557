"""Loading records of entities and facts (JSON lines) through the write path, in one transaction.

A record is ``{"type": "entity", "id", "name", "aliases", "weak_aliases", "summary"}`` or
``{"type": "fact", "subject", "predicate", "object" | "value", "sources", "authority", "status",
"valid_from", "valid_to", "order", "prevents_rework"}``.
"""

import json
from pathlib import Path

from kgrdf.errors import BadInput


def read_records(path: Path) -> list[dict]:
    """Records from a JSON array or a JSON-lines file. Raises BadInput naming the line."""
    text = Path(path).read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise BadInput(f"{path}: not JSON: {exc}") from None
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError as exc:
            raise BadInput(f"{path}:{number}: not JSON: {exc}") from None
    return records


def apply(writer, records: list[dict]) -> dict:
    """Apply every record with the writer; returns counts by outcome."""
    counts: dict[str, int] = {}
    for record in records:
        kind = record.get("type")
        if kind == "entity":
            _, outcome = writer.add_entity(record["id"], record.get("name", ""), record.get("aliases", []),
                                           record.get("weak_aliases", []), record.get("summary"))
        elif kind == "fact":
            result = writer.propose(
                record["subject"], record["predicate"], object=record.get("object"), value=record.get("value"),
                sources=record.get("sources", []), authority=record.get("authority", "observed"),
                valid_from=record.get("valid_from"), valid_to=record.get("valid_to"), order=record.get("order"),
                prevents_rework=bool(record.get("prevents_rework")))
            outcome = result.action
            if record.get("status") == "confirmed" and result.fact.status != "confirmed":
                writer.confirm(result.fact.id, reviewed_by="import")
        else:
            raise BadInput(f"record type {kind!r} is neither entity nor fact")
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts
