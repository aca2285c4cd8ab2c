"""per_hop: a guarantee per intermediate topic (its blueprint name) or egress streamlet."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.checker.expectations.kind import ExpectationKind, Found, Invalid, Scope, guarantee, guaranteed

if TYPE_CHECKING:
    from harness.checker.findings import Hop


def _hop_named(hops: list[Hop], blueprint_topic: str) -> Hop | None:
    """Hops carry real topic names; on an external cluster those are prefixed with the harness namespace."""
    return next((h for h in hops if h.name == blueprint_topic or h.name.endswith("." + blueprint_topic)), None)


def _read(value: dict, scope: Scope) -> dict:
    read: dict[str, Any] = {}
    for topic, expected in value.items():
        if scope.hops is not None and topic not in scope.hops:
            names = ", ".join(sorted(scope.hops))
            raise Invalid(f".{topic}", f"unknown hop {topic!r} (intermediate topics and egresses: {names})")
        read[topic] = guarantee(expected, f".{topic}")
    return read


def _judge(expected: dict, found: Found) -> list:
    results = []
    for topic, guarantee_ in expected.items():
        hop = _hop_named(found.hops, topic)
        actual = hop.verdict if hop and not found.unfinished else None
        why = found.unfinished or "no evidence for this hop"
        results.append(guaranteed(f"per_hop.{topic}", guarantee_, actual, f"hop {topic}", why))
    return results


KIND = ExpectationKind(
    "per_hop", "a guarantee per intermediate topic or egress streamlet", (dict,), _judge, rank=30, read=_read
)
