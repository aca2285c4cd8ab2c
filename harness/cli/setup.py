"""What a machine needs before its runs: the Docker images, the jars (the broker's, the connector, the jar sets and
packages the scenarios' jobs ask for), another Spark version's environment."""

from __future__ import annotations

from pathlib import Path

import click

from contract.applications import APPLICATION
from harness.cli.app import main
from harness.errors import HarnessError


@main.group()
def images():
    """The Docker images of `cluster: {docker: {}}`, built on this machine (no registry is needed)."""


@images.command("build")
@click.option("--runner", is_flag=True, help="Also the image of docker-compose.yml's harness service.")
@click.option("--force", is_flag=True, help="Build again even when up to date.")
@click.option(
    "--if-engine",
    is_flag=True,
    help="For a setup step: do nothing when no Docker engine answers, and say "
    "why (exit 0) when the images cannot be built here.",
)
def images_build(runner: bool, force: bool, if_engine: bool):
    """Build the base image (Debian minbase by debootstrap + a jlink Java) and the Kafka image, when missing
    or out of date; print each image's tag and size.

    \b
    Examples:
      harness images build                # about 3 minutes the first time, then instant
      harness images build --runner       # also harness/runner, for `docker compose run harness`
    """
    from harness.docker import engine
    from harness.docker import images as docker_images

    try:
        client = engine.client()
    except HarnessError as exc:
        if if_engine:
            click.echo(f"no Docker images built: {exc}", err=True)
            return
        raise
    names = ("base", "kafka", "runner") if runner else ("base", "kafka")
    try:
        built = docker_images.ensure(client, names, say=lambda line: click.echo(line, err=True), force=force)
    except HarnessError as exc:
        if if_engine:
            click.echo(f"no Docker images built: {exc}", err=True)
            return
        raise
    for image in built:
        found = docker_images.find(client, image.tag)
        click.echo(f"{image.tag:<32} {found.attrs['Size'] / 1e6:6.0f} MB  {found.short_id}")


@main.command()
@click.argument("scenarios", nargs=-1, type=click.Path(path_type=Path))
def jars(scenarios: tuple[Path, ...]):
    """Fetch the Kafka broker's jars and, for the pyspark installed beside the harness, its Kafka connector and the
    jar sets the built-in streamlet and output kinds need with Maven; train the JVMs' CDS archives
    (both idempotent); and what the applications of SCENARIOS ask for (their packages, their requirements), so that
    their runs need no network. A pyspark whose connector is not served is refused in one line.

    \b
    Examples:
      harness jars                                 the broker's jars, the connector, the output kinds' jars
      harness jars examples/packages/*.yaml        and what those scenarios' jobs ask for
      harness jars scenarios/matrix/kafka-*.yaml   and the Kafka versions their brokers run
    """
    from harness import cds_training
    from harness import jars as jar_sets
    from harness.cluster import releases
    from harness.outputs import builtin_output_kinds
    from harness.scenario import load_scenario
    from harness.spark import lines, packages, versions
    from pipelines.kinds import builtin_kinds

    own = versions.runtime(None)
    needed = [s for cls in builtin_kinds().values() for s in cls.spark_jars]
    needed += [s for kind in builtin_output_kinds().values() for s in kind.jar_sets]
    why = {pom: lines.unserved(pom, own.version) for pom in dict.fromkeys(needed)}
    extra, missing = [pom for pom, no in why.items() if not no], [no for no in why.values() if no]
    jar_sets.fetch((jar_sets.BROKER,))
    versions.fetch_connector(own, tuple(extra))
    click.echo(
        f"Kafka {jar_sets.kafka_version()}, pyspark {own.version}'s connector (Scala {own.scala}) and the jar sets "
        f"{', '.join(extra)} in {jar_sets.set_dir(jar_sets.BROKER).parent}"
    )
    for line in missing:
        click.echo(f"not fetched: {line}")
    for version, why in lines.PUBLISHED_UNSERVED.items():
        click.echo(f"not runnable: Spark {version} is published, {why}")
    for path in scenarios:
        scenario = load_scenario(path)
        if scenario.cluster.kafka_version:
            jar_sets.fetch((releases.jar_set(scenario.cluster.kafka_version),))
            click.echo(f"Kafka {scenario.cluster.kafka_version} for {path}")
        apps = {n: i.settings for n, i in scenario.blueprint.streamlets.items() if i.kind == APPLICATION}
        for line in packages.prefetch(apps, own.python, own.version):
            click.echo(line)
    cds_training.train(say=click.echo)


@main.command("spark-env")
@click.argument("version")
def spark_env(version):
    """Build the environment the drivers of a scenario with `cluster: {spark: {version: VERSION}}` run on: a
    virtualenv with that pyspark under .cache/spark-envs/, and its Kafka connector jars from jars/ (both once; a run
    builds it too when missing).

    \b
    Examples:
      harness spark-env 3.5.7      pyspark 3.5.7 and spark-sql-kafka-0-10_2.12 3.5.7
      harness spark-env 4.2.0      pyspark 4.2.0 and spark-sql-kafka-0-10_2.13 4.2.0
    """
    from harness.spark import versions

    runtime = versions.ensure(version, say=click.echo)
    click.echo(
        f"Spark {runtime.version} (Scala {runtime.scala}): {runtime.python}, connector in {runtime.jars().name} jars"
    )
