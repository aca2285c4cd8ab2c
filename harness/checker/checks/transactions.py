"""A transactional source (workload.transactions): the brokers' view of the producers that wrote its topics in
transactions (producers.csv), each id with the epochs its batches carry and the markers its coordinator wrote, beside
the cluster's transaction.version (versions.json). At transaction.version 2 (KIP-890) the coordinator gives a client
that speaks its protocol a new epoch as each transaction ends, so a late write of an ended one is fenced (Kafka's
Java producer from 4.0: one epoch per transaction); a client that does not (librdkafka 2.16, the generator's) keeps
one epoch for its life, as at 0 or 1. Said only of a run whose source topics hold transactional batches, and judged
nowhere: what the transactions did to the records the records' verdict says."""

from __future__ import annotations

from harness.checker.producers import run_producers
from harness.checker.section import Section
from harness.checker.step import Context, Step
from harness.network.kafka_wire import ABORT, COMMIT

FEATURE = "transaction.version"
HEADER = ("producer id", "batches", "epochs", "first epoch", "last epoch", "commit markers", "abort markers")


def _version_line(versions: dict) -> str:
    features = versions.get("kafka_features") or {}
    level = features.get(FEATURE, 0) if features else None  # a feature its brokers do not know is at level 0
    kafka = versions.get("kafka_broker") or "unknown"
    if level is None:
        return f"Kafka {kafka}, its transaction.version unknown (versions.json has no feature levels)."
    if level >= 2:
        return (
            f"Kafka {kafka} at transaction.version {level}: a client speaking KIP-890's transactions gets a new "
            "epoch as each transaction ends; one that does not keeps its epoch."
        )
    return f"Kafka {kafka} at transaction.version {level}: a producer keeps one epoch for its life."


def _epochs(epochs: list[int]) -> str:
    if len(epochs) == 1:
        return f"one epoch ({epochs[0]}) for every transaction"
    return f"{len(epochs)} epochs, {epochs[0]} to {epochs[-1]}"


def _section(context: Context) -> Section | None:
    producers = run_producers(context, "a transactional source untold", needed=False)
    if producers is None:
        return None
    source = producers[producers.topic.isin(context.evidence.pipeline.source_topics) & (producers.transactional == 1)]
    if source.empty:
        return None
    rows, lines = [], [_version_line(context.evidence.versions)]
    for producer, batches in source.groupby("producer_id"):
        records = batches[batches.control == ""]
        epochs = sorted(set(records.producer_epoch))
        commits, aborts = int((batches.control == COMMIT).sum()), int((batches.control == ABORT).sum())
        rows.append((int(producer), len(records), len(epochs), epochs[0], epochs[-1], commits, aborts))
        lines.append(
            f"Producer {producer} wrote {len(records)} batches under {_epochs(epochs)}; its coordinator wrote "
            f"{commits} commit and {aborts} abort markers."
            if epochs
            else f"Producer {producer} wrote markers only: {commits} commit and {aborts} abort."
        )
    return Section("A transactional source", tuple(lines), HEADER, tuple(rows))


KIND = Step("transactions", section=_section)
