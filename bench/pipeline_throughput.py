"""End-to-end throughput of a fault-free pipeline run, against Kafka's own ProducerPerformance.

    .venv/bin/python bench/pipeline_throughput.py [--rate 3000] [--duration 30] [--payload 64]

Runs ingress -> processor -> egress (upsert, SQLite) on one embedded broker
with the generator at --rate, measures records per second from the first
acknowledged record to the last one stored by the egress, then, on the same
broker, runs org.apache.kafka.tools.ProducerPerformance with the same record
size. Prints both and their ratio (the figure we track).
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

import pandas as pd

from harness import jars
from harness.cluster import KafkaAdmin
from harness.runner.pipeline import PipelineRun
from harness.waiting import wait_for
from harness.scenario.model import parse_scenario


def scenario(rate: float, duration: float, payload: int):
    return parse_scenario({
        "name": "bench",
        "blueprint": {
            "streamlets": {"ingress": {"kind": "ingress"}, "processor": {"kind": "processor"},
                           "egress": {"kind": "egress", "settings": {"mode": "upsert"}}},
            "connections": {"ingress.out": ["processor.in"], "processor.out": ["egress.in"]},
        },
        "workload": {"rate": rate, "duration_s": duration, "payload_bytes": payload, "keys": 16},
    })


def producer_performance(bootstrap: str, records: int, size: int) -> float:
    with KafkaAdmin(bootstrap) as admin:
        admin.create_topic("perf", partitions=2)
    out = subprocess.run(
        [jars.java_executable(), "-Xmx512m", "-cp", jars.kafka_classpath(), "org.apache.kafka.tools.ProducerPerformance",
         "--topic", "perf", "--num-records", str(records), "--record-size", str(size), "--throughput", "-1",
         "--producer-props", f"bootstrap.servers={bootstrap}", "acks=all"],
        capture_output=True, text=True, check=True,
    ).stdout
    summary = [line for line in out.splitlines() if "records sent" in line][-1]
    return float(re.search(r"([\d.]+) records/sec", summary).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=3000)
    parser.add_argument("--duration", type=float, default=30)
    parser.add_argument("--payload", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "bench"
        with PipelineRun(scenario(args.rate, args.duration, args.payload), run_dir, say=print) as run:
            run.start_cluster()
            run.create_topics()
            run.start_drivers()
            run.start_generator(args.duration)
            wait_for(run.generator_done, timeout=args.duration + 120, what="the generator to finish")
            run.drain(timeout=600)
            acks = pd.read_csv(run.layout.ack_log)
            acked = int((acks.status == "acked").sum())
            with sqlite3.connect(run.layout.egress_db("egress")) as db:
                stored, last_ms = db.execute("SELECT count(*), max(written_ms) FROM records").fetchone()
            first_ms = int(acks.event_time_ms.min())
            e2e = stored / ((last_ms - first_ms) / 1000)
            # Same record size on the wire as the generator's JSON values.
            size = len(f'{{"key": "k0000", "seq": 100000, "event_time_ms": {int(time.time() * 1000)}, "payload": ""}}') + args.payload
            perf = producer_performance(run.bootstrap, max(100_000, acked), size)
    print(f"pipeline end to end: {stored} of {acked} acked records stored, {e2e:,.0f} records/s "
          f"(generator asked for {args.rate:,.0f}/s for {args.duration:.0f}s)")
    print(f"Kafka ProducerPerformance, same broker, {size}-byte records, acks=all: {perf:,.0f} records/s")
    print(f"ratio pipeline / ProducerPerformance: {e2e / perf:.3f}")


if __name__ == "__main__":
    main()
