"""`harness cluster up|status|down`: the embedded Kafka cluster, its brokers as processes or containers."""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from harness.cli.app import main
from harness.errors import HarnessError

DEFAULT_CLUSTER_DIR = Path(os.environ.get("HARNESS_CLUSTER_DIR", ".harness/cluster"))


@main.group()
def cluster():
    """The embedded Kafka cluster: real brokers from Kafka's jars, as processes or (--docker) containers."""


def _attach(cluster_dir: Path):
    from harness.docker.by_hand import attach

    return attach(cluster_dir)


dir_option = click.option(
    "--dir",
    "cluster_dir",
    type=click.Path(path_type=Path),
    default=DEFAULT_CLUSTER_DIR,
    show_default=True,
    help="Cluster directory: configs, data, logs and pid files.",
)


@cluster.command("up")
@click.option("--brokers", type=click.Choice(["1", "3"]), default="1", show_default=True, help="Number of brokers.")
@click.option(
    "--docker",
    "in_containers",
    is_flag=True,
    help="Run the brokers as containers (host network), the image built when missing.",
)
@click.option(
    "--security",
    type=click.Choice(["sasl_ssl", "ssl"]),
    default=None,
    help="Secure the clients' listeners: SASL_SSL with a SCRAM user (--user), or TLS with client "
    "certificates; brokers always speak TLS among themselves then. Certificates in DIR/tls.",
)
@click.option(
    "--user",
    default=None,
    metavar="NAME",
    help="With --security sasl_ssl: a SCRAM-SHA-256 user to create, "
    "its password read from the environment variable HARNESS_KAFKA_PASSWORD.",
)
@click.option(
    "--kafka-version",
    default=None,
    metavar="VERSION",
    help="The brokers' Kafka (3.9.1, 4.0.2, 4.4.0 ...: fetched once from jars/kafka/pom.xml); the harness's own "
    "by default.",
)
@dir_option
def cluster_up(
    brokers: str,
    in_containers: bool,
    security: str | None,
    user: str | None,
    kafka_version: str | None,
    cluster_dir: Path,
):
    """Format storage, start the brokers, wait until they answer, print the bootstrap servers.

    \b
    Examples:
      $ harness cluster up --brokers 3
      127.0.0.1:40411,127.0.0.1:38125,127.0.0.1:45277
      $ harness cluster up --docker
      $ harness cluster up --kafka-version 3.9.1
      $ HARNESS_KAFKA_PASSWORD=... harness cluster up --security sasl_ssl --user app
    """
    from harness.cluster.security import ClusterSecurity
    from harness.docker.by_hand import bring_up

    if (user is not None) != (security == "sasl_ssl"):
        raise click.UsageError("--user goes with --security sasl_ssl, and it needs one")
    password = os.environ.get("HARNESS_KAFKA_PASSWORD") if user else None
    if user and not password:
        raise click.UsageError("--user NAME: set its password in the environment variable HARNESS_KAFKA_PASSWORD")
    secured = ClusterSecurity(security) if security else None
    t0 = time.monotonic()
    embedded = bring_up(
        cluster_dir,
        int(brokers),
        in_containers,
        secured,
        user,
        password,
        say=lambda line: click.echo(line, err=True),
        kafka_version=kafka_version,
    )
    click.echo(
        f"Kafka {embedded.kafka_version} up: {brokers} broker(s) in {embedded.workdir} after "
        f"{time.monotonic() - t0:.1f}s",
        err=True,
    )
    if secured:
        access = embedded.client_access(user)
        click.echo(
            f"clients: {access.security.protocol}{f' as {user} (SCRAM-SHA-256)' if user else ''}, the brokers' CA "
            f"in {access.security.ca_file}"
            + (f", a client certificate in {access.security.keystore_file}" if access.security.keystore_file else ""),
            err=True,
        )
    click.echo(embedded.bootstrap_servers)


@cluster.command("status")
@dir_option
def cluster_status(cluster_dir: Path):
    """Show each broker: node id, address, pid, state, and whether the cluster answers."""
    from harness.cluster import KafkaAdmin

    embedded = _attach(cluster_dir)
    live: set[int] = set()
    if embedded.running_brokers():
        try:
            with KafkaAdmin(embedded.admin_access(), request_timeout_ms=3000, connect_timeout_ms=3000) as admin:
                live = admin.live_broker_ids()
        except HarnessError:
            pass
    click.echo(f"cluster {embedded.cluster_id}  Kafka {embedded.kafka_version}  {embedded.workdir}")
    click.echo(f"{'node':<5} {'address':<22} {'controller':<11} {'pid':<8} {'state':<8} {'metadata':<9} log")
    for st in embedded.status():
        listed = "live" if st.node_id in live else "-"
        click.echo(
            f"{st.node_id:<5} {st.address:<22} {st.controller_port:<11} {st.pid or '-':<8} {st.state:<8} {listed:<9} "
            f"{st.log}"
        )
    click.echo(f"bootstrap servers: {embedded.bootstrap_servers}")


@cluster.command("down")
@dir_option
def cluster_down(cluster_dir: Path):
    """Stop exactly the brokers `up` started (processes by pid file and start time; containers by label, removed)."""
    embedded = _attach(cluster_dir)
    running = [b.name for b in embedded.running_brokers()]
    embedded.close()
    click.echo(f"stopped {', '.join(running)}" if running else "no broker was running")
