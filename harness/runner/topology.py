"""A run's pipeline as it is wired: the real name of each topic, which streamlet reads and writes which, how a
topic's values are read back, and the pipeline's description for the run directory. Pure: it starts nothing."""

from __future__ import annotations

from contract.applications import APPLICATION, FULLY, KAFKA_OUTPUT, OUTPUT_KINDS, WRITTEN_OUTPUTS
from contract.roles import EGRESS
from harness.codecs import Decode, avro_decoder, value_decoder
from harness.evidence.description import PipelineDescription, StreamletDescription
from harness.scenario import Scenario
from harness.scenario.blueprint import TopicSpec
from harness.workload.generator_settings import TRACE_HEADER, source_key_prefixes
from pipelines.model import SOURCE_RECORD, Schema

EXTERNAL_TOPIC_PREFIX = "harness."


class Topology:
    """The topics of `scenario`'s pipeline in run `run_id`, and who reads and writes each."""

    def __init__(self, scenario: Scenario, run_id: str):
        self.scenario = scenario
        self.run_id = run_id

    def topic_name(self, spec: TopicSpec) -> str:
        """On a cluster the harness did not create, every topic is in the harness namespace."""
        if self.scenario.cluster.bootstrap_servers:
            return f"{EXTERNAL_TOPIC_PREFIX}{self.run_id}.{spec.name}"
        return spec.name

    def all_topics(self) -> list[TopicSpec]:
        return [source.topic for source in self.scenario.workload.fed] + self.scenario.blueprint.hops()

    def topic_schemas(self) -> dict[str, tuple[str, Schema]]:
        """Real topic name -> (its codec, the schema of its values): the sources', then each outlet's."""
        found = {
            self.topic_name(source.topic): (source.topic.codec, SOURCE_RECORD) for source in self.scenario.workload.fed
        }
        bp = self.scenario.blueprint
        for c in bp.connections:
            found[self.topic_name(c.topic)] = (
                c.topic.codec,
                bp.streamlets[c.outlet[0]].cls.shape.outlet(c.outlet[1]).schema,
            )
        return found

    def value_decoders(self) -> dict[str, Decode]:
        """Real topic name -> how to read its values back (topic dumps, records at risk): a Kafka output written in
        the team's Avro schema with it."""
        decoders = {topic: value_decoder(codec, schema) for topic, (codec, schema) in self.topic_schemas().items()}
        for name, inst in self.scenario.blueprint.streamlets.items():
            if inst.kind == KAFKA_OUTPUT and inst.settings.get("avro"):
                for spec in self.scenario.blueprint.inputs_of(name).values():
                    decoders[self.topic_name(spec)] = avro_decoder(inst.settings["avro"])
        return decoders

    def output_identities(self) -> dict[str, dict]:
        """Real name of each topic a Kafka output reads -> the output's identity (contract/identity.py)."""
        return {
            self.topic_name(spec): inst.settings["identity"]
            for name, inst in self.scenario.blueprint.streamlets.items()
            if inst.kind == KAFKA_OUTPUT
            for spec in self.scenario.blueprint.inputs_of(name).values()
        }

    def streamlet_topics(self, name: str) -> tuple[dict[str, str], dict[str, str], str | None]:
        """A streamlet's real topics: inlet -> topic, outlet -> topic, and the (first) source topic it reads if it
        is an ingress."""
        bp = self.scenario.blueprint
        return (
            {port: self.topic_name(t) for port, t in bp.inputs_of(name).items()},
            {port: self.topic_name(t) for port, t in bp.outputs_of(name).items()},
            next(iter(self.source_topics(name)), None),
        )

    def source_topics(self, name: str) -> list[str]:
        """The real names of the source topics streamlet `name` reads (none: it is not an ingress)."""
        return [self.topic_name(t) for t in self.scenario.workload.read_by(self.scenario.blueprint.streamlets[name])]

    def input_topics(self, name: str) -> list[str]:
        inputs, _, _ = self.streamlet_topics(name)
        return list(inputs.values()) + self.source_topics(name)

    def _declared_sources(self, names: list[str] | None) -> tuple[str, ...] | None:
        """An output's `sources`, by real topic name (None: not declared)."""
        if names is None:
            return None
        return tuple(self.topic_name(s.topic) for s in self.scenario.workload.fed if s.topic.name in names)

    def source_keys(self) -> dict[str, str]:
        """Real source topic -> the prefix of its records' keys (a workload of one source topic: none)."""
        fed = self.scenario.workload.fed
        prefixes = source_key_prefixes([source.topic.name for source in fed])
        return {self.topic_name(source.topic): prefixes[source.topic.name] for source in fed if prefixes}

    def output_topics(self, name: str) -> list[str]:
        return list(self.streamlet_topics(name)[1].values())

    def output_topic(self, name: str) -> str:
        """The real name of the topic Kafka output `name` reads."""
        return self.topic_name(next(iter(self.scenario.blueprint.inputs_of(name).values())))

    def feeds(self, writer: str, reader: str) -> bool:
        """Whether streamlet `writer` writes a topic `reader` reads."""
        return bool(set(self.output_topics(writer)) & set(self.input_topics(reader)))

    def describe(self) -> PipelineDescription:
        """The pipeline as it runs, resolved (real topic names, every setting, each class's declarations)."""
        blueprint = self.scenario.blueprint
        streamlets = []
        for name in blueprint.order():
            inst = blueprint.streamlets[name]
            egress = inst.role == EGRESS
            streamlets.append(
                StreamletDescription(
                    name,
                    inst.kind,
                    inst.role,
                    inst.settings,
                    tuple(self.input_topics(name)),
                    tuple(self.output_topics(name)),
                    drops_late_events=inst.cls.drops_late_events(inst.settings),
                    window=inst.cls.event_time_window(inst.settings),
                    window_slide=inst.cls.event_time_slide(inst.settings),
                    egress_evidence=inst.cls.egress_evidence if egress else None,
                    audit_query=inst.cls.audit_query(inst.settings) if egress else None,
                    identity=inst.settings.get("identity") if inst.kind in OUTPUT_KINDS else None,
                    written_by=inst.settings["written_by"] if inst.kind in WRITTEN_OUTPUTS else None,
                    deduplicates_within_s=(inst.settings.get("deduplicates") or {}).get("within_s")
                    if inst.kind == APPLICATION
                    else None,
                    # a topic keeps every copy; a table's triggers see every write unless its export says otherwise
                    observed=FULLY if inst.kind in OUTPUT_KINDS else None,
                    sources=self._declared_sources(inst.settings.get("sources")),
                )
            )
        return PipelineDescription(
            self.scenario.name,
            self.scenario.description,
            self.topic_name(self.scenario.workload.topic),
            tuple(streamlets),
            self.scenario.expectations,
            TRACE_HEADER if self.scenario.workload.headers else None,
            self.scenario.checks,
            self.source_keys(),
        )
