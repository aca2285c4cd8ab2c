"""The recording of the run's intermediate topics: every record as it is written, from their first offset, so the
checker sees everything a hop carried even where retention (routine or a fault's) has deleted it since, and a run
cut short keeps what it recorded. The source needs none while the run goes on (the generator's acknowledgement log
has each record's partition and offset); it is read back once at the end, values and all, for audits."""

from __future__ import annotations

from harness.cluster.follow import PartitionRecorder
from harness.evidence.history import SOURCE_READ, TOPICS_RECORDED
from harness.evidence.recording_forms import COLUMNAR
from harness.runner.kafka_service import KafkaService
from harness.runner.shared import RunShared
from harness.runner.source_read import read_source
from harness.runner.topology import Topology


class Recording:
    """The intermediate topics of one run, recorded into topics/."""

    def __init__(self, shared: RunShared, topology: Topology, kafka: KafkaService):
        self.shared = shared
        self.topology = topology
        self.kafka = kafka
        self.recorder: PartitionRecorder | None = None

    def start(self) -> None:
        names = [self.topology.topic_name(t) for t in self.shared.scenario.blueprint.hops()]
        whole = self.topology.describe().whole_topics  # their values are the evidence, not their records' identity
        columnar = frozenset(set(names) - whole) if self.shared.scenario.recordings == COLUMNAR else frozenset()
        self.recorder = PartitionRecorder(
            self.kafka.kafka,
            self.kafka.log_starts(names),
            self.shared.layout.topics,
            self.topology.value_decoders(),
            columnar,
            self.topology.output_identities(),
        ).start()

    def follow_new_partitions(self, topic: str) -> None:
        """After partitions were added to `topic`: the recording follows them too (from their first offset)."""
        if self.recorder is not None and topic in self.recorder.topics:
            self.recorder.follow(self.kafka.log_starts([topic]))

    def wait_recorded(self, timeout: float = 120.0) -> None:
        """Until the recording holds every record the intermediate topics have now (their log-end offsets)."""
        if self.recorder is not None:
            self.recorder.wait_caught_up(self.kafka.log_ends(), timeout)

    def save(self) -> None:
        """Complete the recording once nothing writes to the topics any more, and stop it."""
        if self.recorder is None:
            return
        self.wait_recorded()
        self.recorder.stop()
        self.shared.history.record(
            TOPICS_RECORDED,
            topics=self.recorder.topics,
            records=self.recorder.records,
            missed=self.recorder.missed,
            renewals=self.recorder.renewals,
        )
        self.recorder = None

    def read_source(self) -> None:
        """Each source topic's records, read back once into the run directory (the workload over, nothing writes)."""
        for source in self.shared.scenario.workload.fed:
            topic = self.topology.topic_name(source.topic)
            if self.shared.scenario.evidence_budget_bytes is not None:  # the budget is for what the checker needs
                self.shared.history.record(SOURCE_READ, topic=topic, skipped="the run has an evidence budget")
                continue
            path = self.shared.layout.source_records(topic)
            try:
                starts = {p: o for (t, p), o in self.kafka.log_starts([topic]).items() if t == topic}
                ends = {p: o for (t, p), o in self.kafka.log_ends().items() if t == topic}
                read = read_source(self.kafka.kafka, topic, starts, ends, self.topology.value_decoders()[topic], path)
            except Exception as exc:  # an audit's copy, which the checker does not read: said, and the run goes on
                self.shared.history.record(SOURCE_READ, topic=topic, error=str(exc) or type(exc).__name__)
                continue
            self.shared.history.record(SOURCE_READ, topic=topic, records=read.records, missing=read.missing)

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.stop()  # what it recorded so far stays
