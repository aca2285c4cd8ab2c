"""A streamlet's input is decoded once per record, whatever it filters on, and decoded as before.

The Spark session runs in a child process: a JVM started in a test worker would be reused by every later
session of that worker, whatever options those ask for (test_cds checks a driver's JVM options).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PLANS = textwrap.dedent("""
    import json
    from pyspark.sql import functions as F
    from harness.spark.session import spark_session
    from pipelines.context import _decoded_once, batch_map_json
    from pipelines.model import SEQ_RECORD

    spark = spark_session("decoding-test")
    records = [(b'{"key":"a","seq":1}', 0), (None, 1), (b"not json", 2), (b'{"key":"b","seq":"x"}', 3),
               (b'{"key":"c","seq":-4}', 4)]
    raw = spark.createDataFrame(records, "value binary, offset long")
    decode = F.from_json(F.col("value").cast("string"), "key string, seq long")
    valid = F.col("key").isNotNull() & (F.col("seq") >= 0)
    forms = {"plain": raw.select(decode.alias("r"), "offset").select("r.*", "offset"),
             "once": _decoded_once(raw, decode, ["offset"])}
    result = {}
    for name, df in forms.items():
        filtered = df.where(valid)
        result[name] = {
            "decoders_when_filtered": filtered._jdf.queryExecution().optimizedPlan().toString().count("from_json("),
            "filtered": sorted(map(list, filtered.collect())),
            "rows": [list(row) for row in df.orderBy("offset").collect()],
            "schema": df.schema.simpleString(),
        }
    stamped = spark.createDataFrame([(b'{"key":"a","seq":1,"batches":{"ingress":12,"processor":15}}', 0),
                                     (b'{"key":"b","seq":2,"batches": { "ingress" : 7 } }', 1),
                                     (b'{"key":"c","seq":3,"batches":null}', 2), (b'{"key":"d","seq":4}', 3),
                                     (b'{"key":"e","seq":5,"batches":{}}', 4)], "value binary, offset long")
    for form, as_text in (("map", False), ("text", True)):
        df = _decoded_once(stamped, F.from_json(F.col("value").cast("string"), SEQ_RECORD.ddl(as_text)), ["offset"])
        result[f"stamps_{form}"] = {"type": df.schema["batches"].dataType.simpleString(),
                                    "text": [r[0] for r in df.orderBy("offset").select(batch_map_json(df)).collect()]}
    spark.stop()
    print("RESULT " + json.dumps(result))
""")


@pytest.fixture(scope="module")
def forms() -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PLANS],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parent.parent,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT ") :])


@pytest.mark.e2e
def test_a_filter_on_decoded_fields_does_not_decode_the_record_again(forms):
    # what the optimizer makes of a plain selection: a copy per predicate
    assert forms["plain"]["decoders_when_filtered"] > 1
    assert forms["once"]["decoders_when_filtered"] == 1
    assert forms["once"]["filtered"] == forms["plain"]["filtered"] == [["a", 1, 0]]


@pytest.mark.e2e
def test_what_does_not_decode_is_null_as_in_a_plain_selection(forms):
    # A null value and text that is not JSON: a row of nulls; a field of the wrong type: that field null.
    assert forms["once"]["rows"] == [["a", 1, 0], [None, None, 1], [None, None, 2], ["b", None, 3], ["c", -4, 4]]
    assert forms["once"]["rows"] == forms["plain"]["rows"]
    assert forms["once"]["schema"] == forms["plain"]["schema"]


@pytest.mark.e2e
def test_an_egress_reading_the_stamps_as_text_keeps_what_the_map_encoded_again_gives(forms):
    """The egresses read `batches` as the record's JSON text (ctx.read stamps_as_text): the audit must get the same
    text as from the map, spacing and all, and "{}" where a record has no stamps."""
    assert (forms["stamps_map"]["type"], forms["stamps_text"]["type"]) == ("map<string,bigint>", "string")
    assert (
        forms["stamps_text"]["text"]
        == forms["stamps_map"]["text"]
        == ['{"ingress":12,"processor":15}', '{"ingress":7}', "{}", "{}", "{}"]
    )
