"""The scenario file's sections, each declared once (harness/scenario/sections.py): the fields harness/scenario/
parse.py reads through them, and docs/scenarios.md's tables are written from (harness/scenario/sections_doc.py)."""

from __future__ import annotations

from contract.applications import LEFT_OUTER, MICRO_BATCH
from contract.applications import TRIGGERS as APPLICATION_TRIGGERS
from harness.evidence.recording_forms import FORMATS as RECORDING_FORMATS
from harness.evidence.recording_forms import JSON_LINES
from harness.field import Field
from harness.scenario.sections import Section
from pipelines.model import CODECS
from pipelines.settings import SourceOptions

MIN_EVIDENCE_BUDGET = 10**6  # a run writes its description, logs and first recordings before its workload starts

# What one machine can do: a Python generator sends at most tens of thousands of records a second,
# and the checker holds about 0.35 GiB per million delivered records (docs/checker.md).
MAX_RATE = 100_000.0
MAX_DURATION_S = 7 * 24 * 3600.0
MAX_KEYS = 1_000_000
MAX_PAYLOAD_BYTES = 900_000  # under Kafka's default message size limit (1 MB) with the record's other fields
MAX_RECORDS = 50_000_000
MAX_WORKERS = 64  # generator processes: one per core offers the most load
CANARY_TIMEOUT_S = 120.0  # a batch of a job on a busy machine may take tens of seconds


NUMBER = (int, float)
WORKLOAD = Section(
    "workload",
    (
        Field("topic", dict, {}, "the source topic (workload.topic)"),
        Field("keys", int, 8, "record keys, each with its own sequence", minimum=1, maximum=MAX_KEYS),
        Field("rate", NUMBER, 200.0, "records per second", minimum=0.1, maximum=MAX_RATE),
        Field("duration_s", NUMBER, 30.0, "how long the generator sends", minimum=0, maximum=MAX_DURATION_S),
        Field("after_faults_s", NUMBER, None, "also until this long after the last fault", 0, MAX_DURATION_S),
        Field("payload_bytes", int, 64, "padding per record", minimum=0, maximum=MAX_PAYLOAD_BYTES),
        Field("late_share", NUMBER, 0.0, "a share of records sent with old event times", minimum=0, maximum=1),
        Field("late_by_s", NUMBER, 0.0, "how old their event times are", minimum=0),
        Field("late_after_s", NUMBER, 0.0, "late ones only after this long", minimum=0),
        Field("idempotence", bool, True, "the producer's enable.idempotence"),
        Field("acks", (str, int), "all", "the producer's acks: all, or 1 (with idempotence: false)"),
        Field("seed", int, 1, "what the keys, payloads and storms are drawn from"),
        Field("transactions", dict, None, "a transactional producer (workload.transactions)"),
        Field("headers", bool, False, "every record carries the trace header"),
        Field("record", dict, None, "the records in the application's own format"),
        Field("workers", int, 1, "generator processes sharing the keys", minimum=1, maximum=MAX_WORKERS),
        Field("sources", list, [], "more source topics, each fed beside the first (workload.sources[N])"),
    ),
)
SOURCE = Section(
    "workload.sources[N]",
    (
        Field("topic", dict, None, "its topic, as workload.topic (its name required)", required=True),
        Field("keys", int, 8, "its keys, each with its own sequence", minimum=1, maximum=MAX_KEYS),
        Field("rate", NUMBER, 200.0, "its records per second", minimum=0.1, maximum=MAX_RATE),
        Field("record", dict, None, "its records in the application's own format, as workload.record"),
        Field("partner", dict, None, "each record answers one of another source (workload.sources[N].partner)"),
    ),
)
PARTNER = Section(
    "workload.sources[N].partner",
    (
        Field("of", str, None, "the source topic whose records this one answers, one each", required=True),
        Field("field", str, None, "the field of its records that holds the partner's id", required=True),
        Field("after_s", NUMBER, 0.0, "how long after its partner each record is sent", minimum=0, maximum=3600),
        Field("missing", NUMBER, 0.0, "a share of the partner's records answered by none", minimum=0, maximum=1),
        Field("late_share", NUMBER, 0.0, "a share of them sent late", minimum=0, maximum=1),
        Field("late_by_s", NUMBER, 0.0, "how much later than after_s those are sent", minimum=0, maximum=3600),
    ),
)
TOPIC = Section(
    "workload.topic",
    (
        Field("name", str, "source", "its name"),
        Field("partitions", int, 2, "its partitions", minimum=1),
        Field("replication", int, 1, "its replication factor", minimum=1),
        Field("config", dict, {}, "topic configs (retention.ms, ...)"),
        Field("codec", str, "json", "json or avro", choices=CODECS),
    ),
)
BLUEPRINT = Section(
    "blueprint",
    (
        Field("streamlets", dict, None, "the streamlets by name, each its kind and settings", required=True),
        Field("connections", dict, None, "each outlet (streamlet.port) and the inlets it feeds", required=True),
        Field("topics", dict, {}, "each outlet's topic, as workload.topic (its name the outlet's by default)"),
    ),
)
STREAMLET = Section(
    "blueprint.streamlets.NAME",
    (
        Field(
            "kind",
            str,
            None,
            "a built-in kind (ingress, processor, egress, ...) or package.module:Class",
            required=True,
        ),
        Field("settings", dict, {}, "the kind's settings"),
    ),
)
TRANSACTIONS = Section(
    "workload.transactions",
    (
        Field("records", int, 50, "records per transaction", minimum=1, maximum=100_000),
        Field("abort_every", int, 0, "every n-th transaction aborted and written again (0: none)", minimum=0),
    ),
)


SOURCE_OPTIONS = Section.declared_by("source_options.NAME", SourceOptions)  # the driver's own (pipelines/settings.py)


CLUSTER = Section(
    "cluster",
    (
        Field("brokers", int, 1, "the embedded cluster's brokers: 1 or 3"),
        Field("bootstrap_servers", str, None, "a cluster you run instead (its namespace keeps the run's topics)"),
        Field("spark", dict, {}, "where the drivers run their executors, and which Spark (cluster.spark)"),
        Field("docker", dict, None, "the brokers as containers (cluster.docker)"),
        Field("security", str, None, "the embedded cluster's listeners secured", choices=("sasl_ssl", "ssl")),
        Field("kafka", dict, None, "which Kafka the embedded brokers run, with which features (cluster.kafka)"),
    ),
)
SPARK = Section(
    "cluster.spark",
    (
        Field("master", str, "local", "local, standalone, or a spark:// or k8s:// URL of your own"),
        Field("workers", int, 2, "a standalone cluster's workers", minimum=1, maximum=4),
        Field("version", str, None, "the drivers' Spark (the harness's own pyspark by default)"),
    ),
)
DOCKER = Section(
    "cluster.docker",
    (
        Field("image", str, None, "the brokers' image (the harness's own, built when missing)"),
        Field("containers", list, None, "with bootstrap_servers: your broker containers, broker-1... in order"),
    ),
)
EVIDENCE = Section(
    "evidence",
    (
        Field("recordings", str, JSON_LINES, "json, or columnar (Arrow segments)", choices=RECORDING_FORMATS),
        Field(
            "budget", (int, str), None, "the run directory's evidence may take so much", MIN_EVIDENCE_BUDGET, size=True
        ),
    ),
)
PREFLIGHT = Section(
    "preflight",
    (
        Field("canary", bool, True, "a canary record sent through every output before the workload"),
        Field("canary_timeout_s", NUMBER, CANARY_TIMEOUT_S, "how long it may take", minimum=1, maximum=3600),
    ),
)


SCENARIO = Section(
    "scenario",
    (
        Field("name", str, None, "the scenario's name (its reports' and run directories')", required=True),
        Field("description", str, "", "what the run shows"),
        Field("cluster", dict, {}, "the brokers, and where the drivers run (cluster)"),
        Field("blueprint", dict, None, "the harness's streamlets and their connections (or applications)"),
        Field("applications", dict, None, "your own jobs, unchanged (docs/applications.md)"),
        Field("outputs", dict, None, "what the applications write and the harness reads (docs/applications.md)"),
        Field("topics", dict, None, "the applications' own topics"),
        Field("workload", dict, None, "what the generator sends (workload)", required=True),
        Field("store", str, "sqlite", "the egress store: sqlite, or a postgresql:// URL"),
        Field("source_options", dict, {}, "per streamlet: its Kafka source and trigger (source_options.NAME)"),
        Field("faults", list, [], "what to break, when (docs/faults.md)"),
        Field("storm", dict, None, "faults drawn from the seed (docs/faults.md)"),
        Field("explore", dict, None, "the space `harness explore` searches (docs/explore.md)"),
        Field("expectations", dict, {}, "what the run must show to pass"),
        Field("checks", list, [], "checks of your own, package.module:NAME"),
        Field("imports", list, None, "folders your streamlets and checks are imported from (the scenario's)"),
        Field("kafka", dict, None, "how clients reach a secured cluster (docs/security.md)"),
        Field("preflight", dict, None, "the canary before an application's workload (preflight)"),
        Field("evidence", dict, {}, "how the evidence is recorded (evidence)"),
    ),
)
APPLICATION_FIELDS = Section(
    "applications.NAME",
    (
        Field("command", list, None, "how it starts: python or spark-submit and its arguments (placeholders filled)"),
        Field("entry", str, None, "or a function of yours, module:function, given a SparkSession and its settings"),
        Field("settings", dict, {}, "what an entry function is given"),
        Field("env", dict, {}, "its environment (placeholders filled)"),
        Field("cwd", str, ".", "its folder (relative to the scenario's)"),
        Field("reads", list, None, "the topics it reads", required=True),
        Field("writes", list, None, "the topics it writes"),
        Field("keeps", str, None, "the filter it applies, declared: what it drops is not lost"),
        Field("deduplicates", dict, None, "it drops a record's copies within within_s of the first (deduplicates)"),
        Field("joins", dict, None, "it joins each record with its partner's answer within within_s (joins)"),
        Field("trigger", str, MICRO_BATCH, "how its query runs", choices=APPLICATION_TRIGGERS),
        Field("schedule", dict, None, "a job that ends after each run (availableNow, once) started again (schedule)"),
        Field("world", (dict,), None, "what its code names that the run gives it (world)"),
        Field("packages", list, [], "packages it asks Spark for that its code does not name"),
        Field("requirements", object, None, "its own Python requirements: a file in its folder, or a list"),
    ),
)
SCHEDULE = Section(
    "applications.NAME.schedule",
    (
        Field(
            "every_s",
            NUMBER,
            None,
            "a run starts this often (or as the last ends, if it took longer)",
            minimum=1,
            required=True,
        ),
    ),
)
JOINS = Section(
    "applications.NAME.joins",
    (
        Field("partner", str, None, "the partner topic whose answers it joins (workload.sources[N].partner)"),
        Field(
            "within_s",
            NUMBER,
            None,
            "with partner: the time bound, an answer sent at most this long after the record",
            minimum=0.001,
            maximum=7 * 24 * 3600,
        ),
        Field(
            "outer",
            str,
            None,
            "with partner: left, a left outer join (a record unanswered gets a padded row)",
            choices=(LEFT_OUTER,),
        ),
        Field(
            "watermark_s",
            NUMBER,
            None,
            "with outer: the job's watermark delay on each side",
            minimum=0,
            maximum=7 * 24 * 3600,
        ),
        Field("padded_by", str, None, "with outer: the output field null in a padded row (default: the partner's id)"),
        Field("static", str, None, "or the file of a static table it joins (CSV with a header, or JSON lines)"),
        Field("field", str, None, "with static: the record field it joins on"),
        Field("column", str, None, "with static: the table's column it matches (by default the field's name)"),
    ),
)
DEDUPLICATES = Section(
    "applications.NAME.deduplicates",
    (Field("within_s", NUMBER, None, "its watermark's delay", minimum=0.001, maximum=7 * 24 * 3600, required=True),),
)
