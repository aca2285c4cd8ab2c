"""An application given as a `module:function` entry point: `python -m pipelines.entry SETTINGS.json` imports the
function from the application's folder and calls it with a SparkSession and the application's settings (a mapping,
placeholders filled in). The session is Spark's default, named after the application; what the function sets on it
is its own, as in any job."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from contract.plugins import PluginError, import_named


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m pipelines.entry SETTINGS.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(argv[0]).read_text())  # started in the application's folder: `-m` imports from there
    try:
        function = import_named(spec["entry"], "function")
    except PluginError as exc:
        print(f"entry {spec['entry']}: {exc}", file=sys.stderr)
        return 2
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName(spec["name"]).getOrCreate()
    function(spark, spec["settings"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
