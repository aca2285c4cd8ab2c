"""End-to-end throughput of a fault-free pipeline, against Kafka's own ProducerPerformance, with and without evidence.

    .venv/bin/python bench/pipeline_throughput.py [--rate 40000] [--records 600000] [--payload 64] [--codec avro]
                                                  [--proxy] [--repeat 5] [--warmup 200000] [--jit deferred]
                                                  [--trigger-interval '5 seconds'] [--recordings columnar]

On one embedded broker, in this order:

  1. org.apache.kafka.tools.ProducerPerformance with the generator's record size, acks=all, at least 1,000,000 records;
     then the floor of one Spark hop: the harness's relay driver (Kafka -> Kafka, the value copied, nothing parsed,
     the drivers' session settings) copying that backlog, its CPU per record measured while it copies;
     then a warm-up run of the pipeline of step 2 (--warmup records, not counted);
     then this machine's ceiling for any three-hop pipeline: the workload's generator feeding three relays in a
     chain (source -> relay -> relay -> relay), all running at once, nothing parsed, no evidence, no store;
  2. ingress -> processor -> egress (upsert, SQLite) with the harness's evidence (batch stamps on every
     topic record, the egress's audit table, the progress listener);
  3. the same pipeline without stamps and audit (the listener stays: the harness waits on it);
     steps 2 and 3 in interleaved pairs, their order swapped every time (a drift of the machine cancels), at least
     --repeat pairs (5) and then more until the 95% confidence interval of the evidence's cost in CPU per record
     (the mean over the pairs, Student's t) is at most --margin either side (1 point), or --max-pairs (30);
  4. with --proxy: the pipeline with evidence again, every streamlet and the generator connected through the
     network proxy (harness/network/), no fault on: what the proxy costs.

The drivers run the JIT mode --jit names (HARNESS_DRIVER_JIT, harness/spark/session.py: quick by default, C1 only,
for drivers that are killed all through a run; deferred adds C2 for what stays hot, for long runs).
Every topic carries --codec (json by default, or avro). Each pipeline run sends --records records at up to --rate
per second (the generator outruns the pipeline, so it reads a backlog) and is measured from the first record sent
to the last one stored by the egress. Its CPU per record gives a second figure that the pipeline's fill and drain
(seconds through three hops) do not blur: the rate at which its processes would use every core (cores x 10^6 / CPU
microseconds per record).
Prints records/s for each, the pipeline / ProducerPerformance ratio, what the evidence costs, and where the
CPU went: each process's CPU microseconds per record stored, from the generator's start to the drain.
Numbers, not assertions.
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from harness import jars
from harness.checker.file_readers import read_acks
from harness.cluster import EmbeddedCluster, KafkaAdmin
from harness.codecs import value_encoder
from harness.demo import topic_size
from harness.evidence.recording_forms import FORMATS
from harness.jit import JIT_MODES
from harness.network import NetworkLinks
from harness.process import Supervisor
from harness.process.supervisor import ProcessRecord, session_members
from harness.runner.pipeline_run import PipelineRun
from harness.scenario.parse import parse_scenario
from harness.spark.launcher import launch_driver
from harness.waiting import wait_for
from harness.workload.generator_settings import WorkloadSettings
from pipelines.model import CODECS, SOURCE_RECORD


def scenario(
    bootstrap: str,
    name: str,
    rate: float,
    duration: float,
    payload: int,
    codec: str,
    trigger: str | None,
    recordings: str = "json",
):
    return parse_scenario(
        {
            "name": name,
            "evidence": {"recordings": recordings},
            "cluster": {"bootstrap_servers": bootstrap},
            "blueprint": {
                "streamlets": {
                    "ingress": {"kind": "ingress"},
                    "processor": {"kind": "processor"},
                    "egress": {"kind": "egress", "settings": {"mode": "upsert"}},
                },
                "connections": {"ingress.out": ["processor.in"], "processor.out": ["egress.in"]},
                "topics": {"ingress.out": {"codec": codec}, "processor.out": {"codec": codec}},
            },
            "workload": {
                "rate": rate,
                "duration_s": duration,
                "payload_bytes": payload,
                "keys": 16,
                "topic": {"codec": codec},
            },
            "source_options": {name: {"trigger_interval": trigger} for name in ("ingress", "processor", "egress")}
            if trigger
            else {},
        }
    )


def producer_performance(bootstrap: str, records: int, size: int) -> float:
    with KafkaAdmin(bootstrap) as admin:
        admin.create_topic("perf", partitions=2)
    out = subprocess.run(
        [
            jars.java_executable(),
            "-Xmx512m",
            "-cp",
            jars.kafka_classpath(),
            "org.apache.kafka.tools.ProducerPerformance",
            "--topic",
            "perf",
            "--num-records",
            str(records),
            "--record-size",
            str(size),
            "--throughput",
            "-1",
            "--producer-props",
            f"bootstrap.servers={bootstrap}",
            "acks=all",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    summary = [line for line in out.splitlines() if "records sent" in line][-1]
    return float(re.search(r"([\d.]+) records/sec", summary).group(1))


def spark_hop_floor(supervisor: Supervisor, bootstrap: str, folder: Path, records: int) -> dict:
    """What one Spark hop costs with nothing to parse: the relay copies ProducerPerformance's topic to another,
    measured from its first copied record to its last (its JVM's start is not in it)."""
    with KafkaAdmin(bootstrap) as admin:
        admin.create_topic("perf-copy", partitions=2)
    driver = launch_driver(
        supervisor,
        "relay",
        "harness.spark.relay",
        [
            "--bootstrap",
            bootstrap,
            "--source",
            "perf",
            "--sink",
            "perf-copy",
            "--checkpoint",
            str(folder / "checkpoint"),
        ],
        folder / "relay.log",
        cwd=folder,
    )

    def alive():
        return None if driver.running() else f"the relay exited (see {driver.record.log_path})"

    def copied():
        return topic_size(bootstrap, "perf-copy")

    wait_for(lambda: copied() > 0, timeout=300, interval=0.2, what="the relay's first record", abort=alive)
    start = (copied(), cpu_seconds(driver.record), time.monotonic())
    wait_for(
        lambda: copied() >= records,
        timeout=900,
        interval=0.2,
        what=f"{records:,} records copied by the relay",
        abort=alive,
    )
    end = (copied(), cpu_seconds(driver.record), time.monotonic())
    count, cpu, seconds = (e - s for e, s in zip(end, start))
    driver.stop(timeout=30)
    return {"records_s": count / seconds, "cpu_us": cpu * 1e6 / count}


def relay_chain_ceiling(
    supervisor: Supervisor, bootstrap: str, folder: Path, rate: float, records: int, payload: int, codec: str, brokers
) -> dict:
    """The generator and three relays in a chain, running together: what a three-hop pipeline that does no work
    at all moves end to end here, from the first record sent to the last one copied by the third relay."""
    topics = [f"chain-{hop}" for hop in range(4)]
    os.sync()
    with KafkaAdmin(bootstrap) as admin:
        for topic in topics:
            admin.create_topic(topic, partitions=2)
    relays = [
        launch_driver(
            supervisor,
            f"relay-{hop}",
            "harness.spark.relay",
            [
                "--bootstrap",
                bootstrap,
                "--source",
                source,
                "--sink",
                sink,
                "--checkpoint",
                str(folder / f"checkpoint-{hop}"),
            ],
            folder / f"relay-{hop}.log",
            cwd=folder,
        )
        for hop, (source, sink) in enumerate(zip(topics, topics[1:]), start=1)
    ]

    def alive():
        return next((f"{r.name} exited (see {r.record.log_path})" for r in relays if not r.running()), None)

    wait_for(
        lambda: all("relay started" in Path(r.record.log_path).read_text(errors="replace") for r in relays),
        timeout=300,
        interval=0.2,
        what="the relays' queries",
        abort=alive,
    )
    settings = WorkloadSettings(
        bootstrap_servers=bootstrap,
        topic=topics[0],
        ack_log=str(folder / "acks.csv"),
        keys=16,
        rate=rate,
        duration_s=records / rate,
        payload_bytes=payload,
        codec=codec,
    )
    settings.save(folder / "generator.json")
    before = cpu_snapshot(brokers + relays)
    generator = supervisor.start(
        "generator",
        [sys.executable, "-m", "harness.workload.generator", str(folder / "generator.json")],
        folder / "generator.log",
    )
    wait_for(
        lambda: topic_size(bootstrap, topics[-1]) >= records,
        timeout=records / rate + 900,
        interval=0.2,
        what=f"{records:,} records through three relays",
        abort=alive,
    )
    end_ms = time.time() * 1000
    wait_for(lambda: not generator.running(), timeout=60, what="the generator to exit")
    after = cpu_snapshot(brokers + relays)
    for relay in relays:
        relay.stop(timeout=30)
    first_ms = int(pd.read_csv(folder / "acks.csv", usecols=["event_time_ms"]).event_time_ms.min())
    return {
        "records_s": records / ((end_ms - first_ms) / 1000),
        "cpu_us": {name: (after[name] - before[name]) * 1e6 / records for name in after},
    }


def cpu_seconds(record: ProcessRecord) -> float:
    """CPU (user + system) used so far by every live process in the recorded process's session."""
    total = 0
    for pid in session_members(record):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, ValueError, IndexError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def cpu_snapshot(processes) -> dict[str, float]:
    """Each tracked process's CPU seconds so far; the generator's, once reaped, is in this process's children times."""
    return {p.name: cpu_seconds(p.record) for p in processes if p.name != "generator"} | {
        "generator": children_cpu_seconds()
    }


def children_cpu_seconds() -> float:
    """CPU used by this process's reaped children: the generator's, once it has exited."""
    times = os.times()
    return times.children_user + times.children_system


LINKS = ["ingress", "processor", "egress", "generator"]


def pipeline(
    bootstrap: str,
    folder: Path,
    evidence: bool,
    rate: float,
    records: int,
    payload: int,
    codec: str,
    trigger: str | None,
    brokers,
    proxy: NetworkLinks | None = None,
    recordings: str = "json",
) -> dict:
    """One fault-free run; records/s from the first record sent to the last one the egress stored."""
    name = ("with-evidence" if evidence else "without-evidence") + ("-proxied" if proxy else "")
    os.sync()  # what earlier steps wrote goes to disk now, not in the middle of this run
    with PipelineRun(
        scenario(bootstrap, name, rate, records / rate, payload, codec, trigger, recordings),
        folder / f"{folder.name}-{name}",
        say=lambda _: None,
    ) as run:  # a run's topics are named after its folder: one per repeat
        run.streamlets.evidence = evidence
        run.brokers.kafka = run.brokers.external_access()  # the bench's broker, started once for every run
        run.brokers.network = proxy  # every driver and the generator bootstrap through it (KafkaService.client_access)
        run.brokers.create_topics()
        run.streamlets.start_all()
        extra = proxy.supervisor.processes() if proxy else []
        before = cpu_snapshot(brokers + extra + run.processes())
        run.generator.start(records / rate)
        wait_for(run.generator_done, timeout=records / rate + 600, what="the generator to finish")
        acks = read_acks(run.layout.written_ack_log, []).select(["event_time_ms", "status"]).to_pandas()  # either form
        acked = int((acks.status == "acked").sum())

        def store() -> tuple[int, int]:
            with sqlite3.connect(run.layout.egress_db("egress")) as db:
                return db.execute("SELECT count(*), max(written_ms) FROM records").fetchone()

        wait_for(lambda: store()[0] >= acked, timeout=900, interval=0.5, what="the egress to store every record")
        after = cpu_snapshot(brokers + extra + run.processes())
        stored, last_ms = store()
        first_ms, sent_ms = int(acks.event_time_ms.min()), int(acks.event_time_ms.max())
        run.streamlets.drain_and_stop()
    cpu = {name: after[name] - before.get(name, 0.0) for name in after}
    return {
        "acked": acked,
        "stored": stored,
        "cpu": cpu,
        "generator": len(acks) / max((sent_ms - first_ms) / 1000, 1e-3),
        "e2e": stored / ((last_ms - first_ms) / 1000),
    }


def cpu_per_record(run: dict) -> float:
    """Every measured process's CPU microseconds per record stored, summed."""
    return sum(run["cpu"].values()) * 1e6 / max(run["stored"], 1)


def print_cpu(label: str, per_record_us: dict[str, float], cores: int, perf: float) -> None:
    """Each process's CPU microseconds per record, and the rate at which they would use every core."""
    total = sum(per_record_us.values())
    print(
        f"  {label}, microseconds: "
        + ", ".join(f"{name} {us:.1f}" for name, us in per_record_us.items())
        + f"; total {total:.1f}: every core busy at {cores * 1e6 / total:,.0f} records/s, "
        f"{cores * 1e6 / total / perf:.3f} of ProducerPerformance"
    )


# Student's t at 97.5% for 1 to 30 degrees of freedom: the two-sided 95% interval of a mean over few pairs.
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131)
T_975 += (2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def cpu_costs(pairs: list[dict]) -> list[float]:
    """Per pair, what the evidence adds to the CPU per record stored (a share of it without evidence)."""
    return [cpu_per_record(pair[True]) / cpu_per_record(pair[False]) - 1 for pair in pairs]


def where_it_goes(pairs: list[dict]) -> str:
    """Per process, what the evidence adds to its CPU microseconds per record stored: the mean over the pairs and
    its 95% interval (a process's share of the cost, where the profile says to look)."""
    per_process = [
        name for name in pairs[0][True]["cpu"] if all(name in pair[e]["cpu"] for pair in pairs for e in (True, False))
    ]
    shown = []
    for name in per_process:
        added = [
            (
                pair[True]["cpu"][name] / max(pair[True]["stored"], 1)
                - pair[False]["cpu"][name] / max(pair[False]["stored"], 1)
            )
            * 1e6
            for pair in pairs
        ]
        mean, low, high = interval(added) if len(added) > 1 else (added[0], added[0], added[0])
        shown.append(f"{name} {mean:+.2f} us ({low:+.2f} to {high:+.2f})")
    return ", ".join(shown)


def interval(values: list[float]) -> tuple[float, float, float]:
    """The mean of `values` and its two-sided 95% confidence interval (Student's t; at least two values)."""
    mean = statistics.fmean(values)
    t = T_975[len(values) - 2] if len(values) <= len(T_975) + 1 else 1.96
    half = t * statistics.stdev(values) / len(values) ** 0.5
    return mean, mean - half, mean + half


def narrow(values: list[float], margin: float) -> bool:
    """Whether the interval of `values` is at most `margin` either side of their mean."""
    if len(values) < 2:
        return False
    mean, _, high = interval(values)
    return high - mean <= margin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=40000, help="the generator's ceiling, records/s")
    parser.add_argument("--records", type=int, default=600_000)
    parser.add_argument("--payload", type=int, default=64)
    parser.add_argument("--codec", choices=CODECS, default="json", help="every topic's codec")
    parser.add_argument(
        "--trigger-interval",
        metavar="INTERVAL",
        help="every streamlet's processing-time trigger, e.g. '5 seconds' (default: the drivers' 1 second)",
    )
    parser.add_argument("--proxy", action="store_true", help="also run it with every link through the network proxy")
    parser.add_argument(
        "--recordings",
        choices=FORMATS,
        default="json",
        help="the evidence's form (evidence.recordings): the egress's audit in its store (json) or as segments",
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="the least interleaved pairs of pipeline runs with and without evidence"
    )
    parser.add_argument(
        "--margin",
        type=float,
        default=0.01,
        help="pairs are added until the 95%% interval of the evidence's CPU cost is this wide either side [0.01]",
    )
    parser.add_argument("--max-pairs", type=int, default=30, help="the most pairs, whatever the interval [30]")
    parser.add_argument(
        "--warmup",
        type=int,
        default=200_000,
        metavar="RECORDS",
        help="records of a pipeline run before the measured ones, not counted (0: none); the broker's "
        "CPU per record was up to 2.8x its later figure in the first pipeline runs of a new broker",
    )
    parser.add_argument(
        "--jit",
        choices=JIT_MODES,
        default=os.environ.get("HARNESS_DRIVER_JIT", "quick"),
        help="the drivers' JIT mode (default: HARNESS_DRIVER_JIT's, or quick)",
    )
    args = parser.parse_args()
    os.environ["HARNESS_DRIVER_JIT"] = args.jit  # read where each driver's settings are made
    # Same record size on the wire as the generator's values.
    sample = {"key": "k0000", "seq": 100000, "event_time_ms": int(time.time() * 1000), "payload": "x" * args.payload}
    size = len(value_encoder(args.codec, SOURCE_RECORD)(sample))
    with tempfile.TemporaryDirectory() as tmp:
        cluster = EmbeddedCluster.create(Path(tmp) / "cluster", brokers=1, links=LINKS if args.proxy else [])
        supervisor = Supervisor(Path(tmp) / "pids")
        with cluster, supervisor:
            cluster.start()
            perf_records = max(args.records, 1_000_000)  # past its warm-up
            perf = producer_performance(cluster.bootstrap_servers, perf_records, size)
            floor = spark_hop_floor(supervisor, cluster.bootstrap_servers, Path(tmp) / "relay", perf_records)
            brokers = cluster.supervisor.processes()
            if args.warmup:
                pipeline(
                    cluster.bootstrap_servers,
                    Path(tmp) / "warmup",
                    True,
                    args.rate,
                    args.warmup,
                    args.payload,
                    args.codec,
                    args.trigger_interval,
                    brokers,
                    recordings=args.recordings,
                )
            ceiling = relay_chain_ceiling(
                supervisor,
                cluster.bootstrap_servers,
                Path(tmp) / "chain",
                args.rate,
                args.records,
                args.payload,
                args.codec,
                brokers,
            )
            pairs: list[dict] = []
            while len(pairs) < max(args.repeat, 2) or (
                len(pairs) < args.max_pairs and not narrow(cpu_costs(pairs), args.margin)
            ):
                number = len(pairs)
                order = (True, False) if number % 2 == 0 else (False, True)
                pairs.append(
                    {
                        evidence: pipeline(
                            cluster.bootstrap_servers,
                            Path(tmp) / f"pair-{number}",
                            evidence,
                            args.rate,
                            args.records,
                            args.payload,
                            args.codec,
                            args.trigger_interval,
                            brokers,
                            recordings=args.recordings,
                        )
                        for evidence in order
                    }
                )
                costs = cpu_costs(pairs)
                so_far = (
                    ""
                    if len(costs) < 2
                    else " (95%% interval so far %+.2f%% to %+.2f%%)" % tuple(100 * v for v in interval(costs)[1:])
                )
                print(f"pair {number + 1}: evidence's CPU cost per record {costs[-1]:+.2%}{so_far}", flush=True)
            runs = pairs[0]
            if args.proxy:
                proxy = NetworkLinks(
                    supervisor, Path(tmp) / "network", Path(tmp) / "proxy.log", cluster.link_routes()
                ).start()
                proxied = pipeline(
                    cluster.bootstrap_servers,
                    Path(tmp),
                    True,
                    args.rate,
                    args.records,
                    args.payload,
                    args.codec,
                    args.trigger_interval,
                    brokers,
                    proxy,
                )
    print(f"drivers' JIT: {args.jit}; trigger: every {args.trigger_interval or '1 second'}")
    print(
        f"Kafka ProducerPerformance, same broker, {size}-byte records ({args.codec}'s size), acks=all: {perf:,.0f} "
        "records/s"
    )
    hops, cores = 3 * floor["cpu_us"], os.cpu_count()
    print(
        f"one Spark hop with nothing to parse (the relay, Kafka -> Kafka, same session settings): "
        f"{floor['records_s']:,.0f} records/s, {floor['cpu_us']:.1f} CPU microseconds per record; three such hops "
        f"alone: {hops:.1f} us, at most {cores * 1e6 / hops:,.0f} records/s on {cores} cores, "
        f"{cores * 1e6 / hops / perf:.3f} of ProducerPerformance"
    )
    print(
        f"this machine's ceiling for three hops: the generator feeding three relays in a chain, all at once, "
        f"nothing parsed: {ceiling['records_s']:,.0f} records/s end to end, {ceiling['records_s'] / perf:.3f} of "
        f"ProducerPerformance"
    )
    print_cpu("CPU per record", ceiling["cpu_us"], cores, perf)
    labelled = {f"pipeline {'with' if evidence else 'without'} evidence": r for evidence, r in runs.items()}
    if args.proxy:
        labelled["pipeline with evidence, every link through the proxy"] = proxied
    for label, r in labelled.items():
        print(
            f"{label}: {r['stored']:,} of {r['acked']:,} acked records stored, "
            f"{r['e2e']:,.0f} records/s end to end (generator sent {r['generator']:,.0f}/s)"
        )
        print_cpu(
            "CPU per record stored",
            {name: seconds * 1e6 / max(r["stored"], 1) for name, seconds in r["cpu"].items()},
            cores,
            perf,
        )
    with_evidence = runs[True]["e2e"]
    print(f"ratio pipeline (with evidence) / ProducerPerformance: {with_evidence / perf:.3f}")
    throughput_costs = [1 - pair[True]["e2e"] / pair[False]["e2e"] for pair in pairs]
    mean, low, high = interval(cpu_costs(pairs))
    print(
        f"over {len(pairs)} interleaved pair(s): with evidence "
        + ", ".join(f"{pair[True]['e2e']:,.0f}" for pair in pairs)
        + "; without "
        + ", ".join(f"{pair[False]['e2e']:,.0f}" for pair in pairs)
        + " records/s"
    )
    print(
        f"evidence overhead (stamps, audit): median {statistics.median(throughput_costs):+.1%} of the throughput "
        f"without it (spread {min(throughput_costs):+.1%} to {max(throughput_costs):+.1%}); CPU per record: median "
        f"{statistics.median(cpu_costs(pairs)):+.1%} (spread {min(cpu_costs(pairs)):+.1%} to "
        f"{max(cpu_costs(pairs)):+.1%})"
    )
    print(f"where the evidence's CPU goes, per process: {where_it_goes(pairs)}")
    print(
        f"evidence's CPU cost per record: mean {mean:+.2%}, 95% confidence interval {low:+.2%} to {high:+.2%} "
        f"({len(pairs)} pairs)"
    )
    chain = statistics.median(pair[True]["e2e"] for pair in pairs) / ceiling["records_s"]
    print(f"pipeline with evidence (median over the pairs) / the three-relay ceiling: {chain:.3f}")
    if args.proxy:
        print(f"proxy cost (no fault on): {1 - proxied['e2e'] / with_evidence:+.1%} of the throughput without it")


if __name__ == "__main__":
    main()
