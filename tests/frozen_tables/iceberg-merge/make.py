"""How the Iceberg tables here were written, once: Spark 4.0.0 with Iceberg 1.10.0 (its runtime jar's folder the
first argument, the warehouse the second), the same statements in merge-on-read and in copy-on-write. The tables'
metadata names that warehouse; the readers find their files under each table's folder.

    .cache/spark-envs/pyspark-4.0.0/bin/python make.py .cache/jars/iceberg-4.0.0 /tmp/wh
"""

import glob
import sys

from pyspark.sql import SparkSession

MODES = {"mor": "merge-on-read", "cow": "copy-on-write"}
UPSERT = "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"

jars, warehouse = sys.argv[1:3]
spark = (
    SparkSession.builder.master("local[1]")
    .config("spark.jars", ",".join(glob.glob(f"{jars}/*.jar")))
    .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
    .config("spark.sql.catalog.lake", "org.apache.iceberg.spark.SparkCatalog")
    .config("spark.sql.catalog.lake.type", "hadoop")
    .config("spark.sql.catalog.lake.warehouse", warehouse)
    .config("spark.sql.shuffle.partitions", "1")
    .getOrCreate()
)
for name, mode in MODES.items():
    modes = ", ".join(
        ["'format-version'='2'", *(f"'write.{op}.mode'='{mode}'" for op in ("merge", "update", "delete"))]
    )
    table = f"lake.db.{name}"
    spark.sql(f"CREATE TABLE {table} (order_id STRING, amount DOUBLE) USING iceberg TBLPROPERTIES (" + modes + ")")
    spark.sql(f"INSERT INTO {table} VALUES ('k1-1', 1.0), ('k1-2', 1.0), ('k1-3', 1.0)")
    for batch in ("('k1-3', 1.0), ('k1-4', 1.0)", "('k1-2', 9.0)"):  # a replay of k1-3 as it was; k1-2 changed
        spark.sql(f"SELECT * FROM VALUES {batch} AS s(order_id, amount)").createOrReplaceTempView("s")
        spark.sql(f"MERGE INTO {table} t USING s ON t.order_id = s.order_id {UPSERT}")
    spark.sql(f"DELETE FROM {table} WHERE order_id = 'k1-1'")
    print(name, sorted(row.order_id for row in spark.table(table).collect()))
