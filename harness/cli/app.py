"""The `harness` command group: user-facing failures become one line on stderr and an exit code."""

from __future__ import annotations

import signal
import sys

import click

from harness.errors import HarnessError


def _sigterm_as_interrupt(signum, frame):
    raise KeyboardInterrupt


class HarnessGroup(click.Group):
    """Turns user-facing failures into one line on stderr and an exit code, never a traceback."""

    def main(self, args=None, prog_name=None, **extra):
        signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
        # A shell starts background jobs with SIGINT ignored, and Python then never raises
        # KeyboardInterrupt: restore it so `kill -INT` stops a run cleanly wherever it was started.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            return super().main(args=args, prog_name=prog_name, standalone_mode=False, **extra)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(2)
        except HarnessError as exc:
            click.echo(f"harness: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except (KeyboardInterrupt, click.exceptions.Abort):
            click.echo("harness: interrupted; processes stopped", err=True)
            sys.exit(130)


@click.group(cls=HarnessGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="spark-kafka-harness")
def main():
    """Delivery-semantics test harness for Spark Structured Streaming pipelines over Kafka.

    \b
    Examples:
      harness init my-project             a project: scenarios, a job to replace, CI recipes
      harness jars                        fetch the Kafka and Spark jars once (Maven, into the cache)
      harness docs [TOPIC]                the reference pages shipped with this harness
      harness cluster up --brokers 3      start a real 3-broker Kafka (KRaft) on loopback
      harness cluster up --docker         the same brokers as containers (images built here)
      harness cluster status              brokers, pids, ports, health
      harness cluster down                stop exactly what `up` started
      harness scenarios                   the shipped scenarios
      harness validate my-scenario.yaml   check a scenario and the code it names; start nothing
      harness run smoke                   a shipped scenario by name: a pipeline under faults, reports in reports/
      harness check RUN_DIR               judge a stored run again (verdict, expectations)
      harness report RUN_DIR              rewrite its report.json/.md/.html and junit.xml
      harness gate scenarios/             run a suite, junit.xml + summary, exit 1 on any failure
      harness matrix scenarios/matrix/guarantees.yaml   a grid of sinks x faults: the guarantee in each cell
      harness clean RUN_DIR               stop what a killed run left running
      harness demo                        Kafka -> Spark -> Kafka, stopped and restarted
      harness spark-env 3.5.7             the drivers' environment for cluster.spark.version 3.5.7
      harness images build                the Docker images of cluster.docker (no registry needed)
    """
