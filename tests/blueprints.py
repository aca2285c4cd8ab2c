"""Blueprints the real-run tests share."""

from __future__ import annotations


def three_step(ingested: dict | None = None, processed: dict | None = None) -> dict:
    """Ingress -> processor -> upsert egress over the topics `ingested` and `processed` (each with more options)."""
    return {
        "streamlets": {
            "ingress": {"kind": "ingress"},
            "processor": {"kind": "processor"},
            "egress": {"kind": "egress", "settings": {"mode": "upsert"}},
        },
        "connections": {"ingress.out": ["processor.in"], "processor.out": ["egress.in"]},
        "topics": {
            "ingress.out": {"name": "ingested", **(ingested or {})},
            "processor.out": {"name": "processed", **(processed or {})},
        },
    }
