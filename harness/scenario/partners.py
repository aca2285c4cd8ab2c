"""Records correlated across source topics (`workload.sources[N].partner`): each record of a source topic `of` is
answered by one record of the partner topic, carrying the id of the record it answers in its `field` (the same id in
an order and its payment), sent `after_s` later; a declared share gets none (`missing`), another share is sent later
still (`late_share`, `late_by_s`), as a job relating the two topics meets them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.identity import DEFAULT_FORMAT, FORMAT, HEADER, ID, MESSAGE_KEY, compose
from harness.scenario.declared import PARTNER
from harness.scenario.fields import BlueprintError


@dataclass(frozen=True)
class PartnerSpec:
    """What a partner topic answers (`of`, a source topic's name) and how."""

    of: str
    field: str  # the top-level field of each record holding the id of the record it answers
    after_s: float = 0.0
    missing: float = 0.0
    late_share: float = 0.0
    late_by_s: float = 0.0

    def settings(self, of_topic: str, of_record: dict | None) -> dict:
        """The generator's settings of it (WorkloadSettings.sources[i]["partner"]): the answered topic's real name
        and the form of its records' ids (their identity's format, or the harness's own)."""
        identity = (of_record or {}).get("identity") or {}
        fmt = identity.get(FORMAT, DEFAULT_FORMAT) if ID in identity else DEFAULT_FORMAT
        return {
            "of": of_topic,
            "field": self.field,
            "id_format": fmt,
            "after_s": self.after_s,
            "missing": self.missing,
            "late_share": self.late_share,
            "late_by_s": self.late_by_s,
        }


def read_partner(raw: dict, path: str, record: Any, answered: dict[str, dict | None]) -> tuple[PartnerSpec, dict]:
    """A source's partner, checked against the topics fed before it (`answered`: name -> record template, of each
    drawing its own records), and its record template as declared with the partner's field in it (an id like the
    answered records', set over by each answer): so its formats (an Avro schema, a line's fields) are checked with
    it."""
    p = PARTNER.read(raw, path)
    if p["of"] not in answered:
        known = ", ".join(answered)
        raise BlueprintError(
            f"{path}.of", f"{p['of']!r} is not a source topic fed before it with its own rate ({known})"
        )
    if not isinstance(record, dict):
        raise BlueprintError(path, "a partner's records carry the id they answer: give the source a record template")
    identity, fields = record.get("identity"), record.get("fields", {})
    places = {str(v).split(".")[0] for k, v in identity.items() if k != FORMAT} if isinstance(identity, dict) else set()
    taken = {p for p in places if p != MESSAGE_KEY and not p.startswith(HEADER)}
    name = p["field"]
    if not name or "." in name or name in taken or (isinstance(fields, dict) and name in fields):
        raise BlueprintError(f"{path}.field", f"{name!r}: a top-level field of its own, not one the template sets")
    partner = PartnerSpec(p["of"], name, p["after_s"], p["missing"], p["late_share"], p["late_by_s"])
    example = compose(partner.settings(p["of"], answered[p["of"]])["id_format"], "k0000", 0)
    return partner, {**record, "fields": {**(fields if isinstance(fields, dict) else {}), name: example}}
