"""Reading the streamlets' query events (progress/<streamlet>.jsonl) while a run goes on."""

from __future__ import annotations

import json
from pathlib import Path


def query_events(path: Path) -> list[dict]:
    """Every complete JSON line of a progress file (a line being written is skipped)."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return []
    events = []
    for line in text.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events


def started_queries(events: list[dict]) -> set[str]:
    return {e["query"] for e in events if e["event"] == "started"}


def processed_offsets(events: list[dict]) -> dict[str, dict[tuple[str, int], int]]:
    """query -> {(topic, partition): offset processed up to (exclusive)}, from progress endOffsets."""
    done: dict[str, dict[tuple[str, int], int]] = {}
    for e in events:
        if e["event"] != "progress":
            continue
        query = e["query"]
        for source in e["progress"].get("sources", []):
            end = source.get("endOffset")
            if isinstance(end, str):
                try:
                    end = json.loads(end)
                except ValueError:
                    continue
            if not isinstance(end, dict):
                continue
            for topic, partitions in end.items():
                for partition, offset in partitions.items():
                    key = (topic, int(partition))
                    mine = done.setdefault(query, {})
                    mine[key] = max(mine.get(key, 0), int(offset))
    return done

