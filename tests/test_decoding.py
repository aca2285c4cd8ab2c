"""A streamlet's input is decoded once per record, whatever it filters on, and decoded as before."""

from __future__ import annotations

import pytest

from harness.spark.session import spark_session
from pipelines.context import _decoded_once

DDL = "key string, seq long"
RECORDS = [(b'{"key":"a","seq":1}', 0), (None, 1), (b"not json", 2), (b'{"key":"b","seq":"x"}', 3), (b'{"key":"c","seq":-4}', 4)]


@pytest.fixture(scope="module")
def spark():
    session = spark_session("decoding-test")
    yield session
    session.stop()


def decoders_in_plan(df) -> int:
    return df._jdf.queryExecution().optimizedPlan().toString().count("from_json(")


@pytest.mark.e2e
def test_a_filter_on_decoded_fields_does_not_decode_the_record_again(spark):
    from pyspark.sql import functions as F

    raw = spark.createDataFrame(RECORDS, "value binary, offset long")
    decode = F.from_json(F.col("value").cast("string"), DDL)
    valid = F.col("key").isNotNull() & (F.col("seq") >= 0)

    selected = raw.select(decode.alias("r"), "offset").select("r.*", "offset").where(valid)
    once = _decoded_once(raw, decode, ["offset"]).where(valid)

    assert decoders_in_plan(selected) > 1  # what the optimizer does to the plain selection: a copy per predicate
    assert decoders_in_plan(once) == 1
    assert once.schema == selected.schema
    assert sorted(once.collect()) == sorted(selected.collect()) == [("a", 1, 0)]


@pytest.mark.e2e
def test_what_does_not_decode_is_null_as_in_a_plain_selection(spark):
    from pyspark.sql import functions as F

    raw = spark.createDataFrame(RECORDS, "value binary, offset long")
    decode = F.from_json(F.col("value").cast("string"), DDL)

    rows = sorted(_decoded_once(raw, decode, ["offset"]).collect(), key=lambda row: row.offset)
    plain = sorted(raw.select(decode.alias("r"), "offset").select("r.*", "offset").collect(), key=lambda row: row.offset)

    # A null value and text that is not JSON: a row of nulls; a field of the wrong type: that field null.
    assert [tuple(row) for row in rows] == [("a", 1, 0), (None, None, 1), (None, None, 2), ("b", None, 3), ("c", -4, 4)]
    assert rows == plain
