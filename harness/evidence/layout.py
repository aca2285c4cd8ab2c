"""Where each piece of evidence lives in a run directory (one place, used by writers and readers)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# The form of the run directory's files. Bumped when a file a reader reads changes its form; the frozen run
# directories the tests judge (tests/frozen_runs/) are then recorded again.
RUN_DIR_VERSION = 1
WAREHOUSE = "spark-warehouse"  # a job's warehouse, in its folder of the run's own (RunLayout.warehouse)


@dataclass(frozen=True)
class RunLayout:
    root: Path

    @property
    def scenario(self) -> Path:
        return self.root / "scenario.json"

    @property
    def pipeline(self) -> Path:
        """The pipeline as it ran (harness/evidence/description.py): all the checker knows of it."""
        return self.root / "pipeline.json"

    @property
    def own_checks(self) -> Path:
        """The scenario's own checks' modules, kept as the run began (harness/checker/own_checks.py)."""
        return self.root / "checks"

    @property
    def versions(self) -> Path:
        return self.root / "versions.json"

    @property
    def history(self) -> Path:
        return self.root / "history.jsonl"

    @property
    def ack_log(self) -> Path:
        """The generator's acknowledgement log as CSV lines."""
        return self.root / "acks.csv"

    @property
    def ack_segments(self) -> Path:
        """The same log in columnar form (evidence: {recordings: columnar}): a folder of segments."""
        return self.root / "acks"

    @property
    def written_ack_log(self) -> Path:
        """The acknowledgement log in the form the run wrote it: the segments' folder if there is one, else the CSV."""
        return self.ack_segments if self.ack_segments.is_dir() else self.ack_log

    @property
    def all_columnar(self) -> bool:
        """Whether every recording of the run is in columnar form (what the engines read): the acknowledgement log's
        segments, and no topic or exported egress state as JSON lines."""
        as_lines = (self.topic_dump("*"), self.egress_state("*"))
        return self.ack_segments.is_dir() and not any(
            any(self.root.glob(str(p.relative_to(self.root)))) for p in as_lines
        )

    @property
    def values(self) -> Path:
        """The fields of each record sent that the outputs' aggregates are judged by (harness/evidence/values.py)."""
        return self.root / "values"

    @property
    def producers(self) -> Path:
        """The brokers' producer id of each record batch of the run's topics (harness/evidence/producers.py)."""
        return self.root / "producers.csv"

    @property
    def kafka_requests(self) -> Path:
        """The Kafka requests the network proxy acted on, a JSON line each (harness/network/wire.py)."""
        return self.root / "kafka-requests.jsonl"

    @property
    def partners(self) -> Path:
        """What became of each answer a partner topic owes (harness/evidence/partners.py)."""
        return self.root / "partners.csv"

    @property
    def generator_settings(self) -> Path:
        return self.root / "generator.json"

    @property
    def registry_settings(self) -> Path:
        return self.root / "registry.json"

    @property
    def registry_requests(self) -> Path:
        """What the jobs asked the run's schema registry (harness/workload/registry.py), a JSON line a request."""
        return self.root / "registry.jsonl"

    def progress(self, streamlet: str) -> Path:
        return self.root / "progress" / f"{streamlet}.jsonl"

    def driver_settings(self, streamlet: str) -> Path:
        return self.root / "streamlets" / f"{streamlet}.json"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    def log(self, process: str) -> Path:
        return self.log_dir / f"{process}.log"

    def egress_db(self, streamlet: str) -> Path:
        return self.root / "egress" / f"{streamlet}.sqlite"

    def egress_audit(self, streamlet: str) -> Path:
        """An egress's deliveries in columnar form (evidence: {recordings: columnar}): one folder of segments per
        query, instead of the audit table of its store."""
        return self.root / "egress" / f"{streamlet}.audit"

    def workdir(self, streamlet: str) -> Path:
        """A folder of the streamlet's own (a user's egress may keep its store there; a job's Spark its warehouse,
        its Derby metastore and, moved here at the end, the session artifacts a kill left in the job's folder)."""
        return self.root / "work" / streamlet

    def warehouse(self, streamlet: str) -> Path:
        """Where a job's Spark keeps the tables it names in its catalog (spark.sql.warehouse.dir), across restarts."""
        return self.workdir(streamlet) / WAREHOUSE

    def egress_state(self, streamlet: str) -> Path:
        """An egress of your own: its final state as exported after the run, one JSON line per record."""
        return self.root / "egress" / f"{streamlet}.state.jsonl"

    def egress_values(self, streamlet: str) -> Path:
        """An output table holding a running aggregate: each value a row took, in write order, one JSON line each
        ({"at_ms", "row"}); its state at the end is egress_state's."""
        return self.root / "egress" / f"{streamlet}.values.jsonl"

    def egress_records(self, streamlet: str) -> Path:
        """An exported egress's final state in columnar form (evidence: {recordings: columnar}): segments of its
        records (key, seq, batch_id), instead of the records table of its store or the exported JSON lines."""
        return self.root / "egress" / f"{streamlet}.records"

    def dropped(self, streamlet: str) -> Path:
        """The records a streamlet dropped by design (declared through its context), one JSON line each."""
        return self.root / "dropped" / f"{streamlet}.jsonl"

    def crash_arm(self, streamlet: str) -> Path:
        """Created by the harness to arm a driver's crash point (pipelines/crashpoint.py)."""
        return self.root / "control" / f"{streamlet}.arm"

    def crash_held(self, streamlet: str) -> Path:
        """Written by the driver holding at its crash point: query and batch id."""
        return self.root / "control" / f"{streamlet}.held"

    def crash_offered(self, streamlet: str) -> Path:
        """Written by a driver that started a query passing a crash point (the context's foreachBatch): an armed
        point can hold a batch there. A driver writing only with Spark's own sinks, or a team's job, has none."""
        return self.root / "control" / f"{streamlet}.point"

    @property
    def spark_cluster(self) -> Path:
        """The Spark standalone cluster's work folders (a worker's executors' stdout and stderr)."""
        return self.root / "spark-cluster"

    @property
    def network_control(self) -> Path:
        """The network proxy's routes (proxy.json) and each link's state (<link>.json, written by the harness;
        <link>.applied, the generation the proxy applied): harness/network/."""
        return self.root / "control" / "network"

    @property
    def topics(self) -> Path:
        """The intermediate topics as the run recorded them, every record from the first offset, one
        <topic>.jsonl or <topic>/ of segments each (harness/cluster/follow.py)."""
        return self.root / "topics"

    def topic_dump(self, topic: str) -> Path:
        """A topic recorded as JSON lines (harness/evidence/topics.py)."""
        return self.topics / f"{topic}.jsonl"

    @property
    def job_folders(self) -> Path:
        """The artifacts folders of a team's jobs as they were before the run (harness/runner/job_folders.py)."""
        return self.root / "work" / "job-folders.json"

    def source_records(self, topic: str) -> Path:
        """The source topic's records, read back after the workload (harness/runner/source_read.py)."""
        return self.root / "source" / f"{topic}.parquet"

    def topic_segments(self, topic: str) -> Path:
        """A topic recorded in columnar form: a folder of segments (harness/evidence/topics.py)."""
        return self.topics / topic

    def world(self, application: str) -> Path:
        """An application's world (harness/runner/world.py): its specs, its hosts file, the files rendered for it,
        what it writes in its own folder (folder/upper) and the folders it names that no run folder is given."""
        return self.root / "world" / application

    @property
    def mount_points(self) -> Path:
        """The mount points the run made on the machine for its jobs' worlds (harness/world/mountpoints.py)."""
        return self.root / "world" / "mount-points.json"

    def checkpoints(self, streamlet: str) -> Path:
        """One folder per streamlet, one checkpoint per query inside it."""
        return self.root / "checkpoints" / streamlet

    @property
    def scratch(self) -> Path:
        """The drivers' scratch spaces (spark.local.dir), one folder per streamlet or job."""
        return self.root / "spark-local"

    def spark_local(self, streamlet: str) -> Path:
        """The driver's scratch space (spark.local.dir): here, not in /tmp, so it is measured and goes with the run."""
        return self.scratch / streamlet

    @property
    def not_evidence(self) -> tuple[str, ...]:
        """The entries of the run directory that are not evidence: the brokers' data (the topics' retention bounds
        it) and the drivers' scratch (Spark removes it as a driver stops)."""
        return (self.cluster.name, self.scratch.name)

    def retired_checkpoints(self, streamlet: str, n: int) -> Path:
        """Where the n-th redeploy of a streamlet moved its checkpoints."""
        return self.root / "checkpoints-retired" / f"{streamlet}-{n}"

    def damaged_checkpoints(self, streamlet: str) -> Path:
        """Where damage-checkpoint keeps each file it removed or cut, whole, under its path in checkpoints/ (a folder
        per fault: 1, 2, ...)."""
        return self.root / "checkpoints-damaged" / streamlet

    def retired_checkpoint_dirs(self, streamlet: str) -> list[Path]:
        return sorted((self.root / "checkpoints-retired").glob(f"{streamlet}-*"))

    @property
    def pids(self) -> Path:
        return self.root / "pids"

    @property
    def cluster(self) -> Path:
        return self.root / "cluster"

    @property
    def summary(self) -> Path:
        return self.root / "run.json"

    @property
    def judged(self) -> Path:
        """A long run's periods judged as it ran: one JSON line per judgment (harness/live_judge.py)."""
        return self.root / "judged.jsonl"
