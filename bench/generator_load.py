"""The load one generator offers, as one process and as several (workload.workers), against Kafka's ProducerPerformance.

    .venv/bin/python bench/generator_load.py [--records 600000] [--workers 1 2] [--payload 64] [--recordings columnar]

On one embedded broker: ProducerPerformance sends --records records of the generator's record size (acks=all, as
fast as it can); then the workload's generator sends as many, at a rate no process keeps up with, once for each
--workers count, with its acknowledgement log in the --recordings form. For each: records/s from its start to its
exit (start-up and the last acknowledgements included) and CPU microseconds per record, the generator's workers
included; and both as a ratio to ProducerPerformance's. Numbers, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.pipeline_throughput import children_cpu_seconds, producer_performance  # noqa: E402
from harness.cluster import EmbeddedCluster, KafkaAdmin  # noqa: E402
from harness.codecs import value_encoder  # noqa: E402
from harness.evidence.recording_forms import COLUMNAR, FORMATS  # noqa: E402
from harness.workload.generator_settings import WorkloadSettings  # noqa: E402
from pipelines.model import SOURCE_RECORD  # noqa: E402


def timed(run) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds of the children it waited for, what it returned)."""
    cpu, t = children_cpu_seconds(), time.perf_counter()
    out = run()
    return time.perf_counter() - t, children_cpu_seconds() - cpu, out


def generator(bootstrap: str, folder: Path, records: int, workers: int, payload: int, recordings: str) -> dict:
    topic = f"load-{workers}"
    with KafkaAdmin(bootstrap) as admin:
        admin.create_topic(topic, partitions=2)
    acks = folder / topic / ("acks" if recordings == COLUMNAR else "acks.csv")
    acks.parent.mkdir(parents=True)
    settings = acks.parent / "generator.json"
    WorkloadSettings(
        bootstrap, topic, str(acks), keys=64, rate=1e7, duration_s=None, max_records=records,
        payload_bytes=payload, workers=workers,
    ).save(settings)  # fmt: skip
    argv = [sys.executable, "-m", "harness.workload.generator", str(settings)]
    wall, cpu, done = timed(lambda: subprocess.run(argv, capture_output=True, text=True, check=True))
    summary = json.loads(done.stdout.splitlines()[-1])["generator"]
    return {"wall": wall, "cpu": cpu, "acked": summary["acked"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=600_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="generator process counts to measure")
    parser.add_argument("--payload", type=int, default=64)
    parser.add_argument("--recordings", choices=FORMATS, default=COLUMNAR, help="the acknowledgement log's form")
    args = parser.parse_args()
    sample = {"key": "k0000", "seq": 100000, "event_time_ms": int(time.time() * 1000), "payload": "x" * args.payload}
    size = len(value_encoder("json", SOURCE_RECORD)(sample))
    print(f"{os.cpu_count()} cores; {args.records:,} records of {size} bytes each, acks=all, one broker")
    with tempfile.TemporaryDirectory() as tmp:
        cluster = EmbeddedCluster.create(Path(tmp) / "cluster", brokers=1)
        with cluster:
            cluster.start()
            bootstrap = cluster.bootstrap_servers
            wall, cpu, rate = timed(lambda: producer_performance(bootstrap, args.records, size))
            perf_us = cpu * 1e6 / args.records
            print(f"Kafka ProducerPerformance: {rate:,.0f} records/s, CPU {perf_us:.1f} us/record (JVM start included)")
            for workers in args.workers:
                run = generator(bootstrap, Path(tmp), args.records, workers, args.payload, args.recordings)
                records_s, us = run["acked"] / run["wall"], run["cpu"] * 1e6 / run["acked"]
                print(
                    f"generator, {workers} worker{'s' * (workers > 1)}: {run['acked']:,} acked in {run['wall']:.1f} s, "
                    f"{records_s:,.0f} records/s ({records_s / rate:.2f} of ProducerPerformance), "
                    f"CPU {us:.1f} us/record ({us / perf_us:.1f}x ProducerPerformance's)"
                )


if __name__ == "__main__":
    main()
