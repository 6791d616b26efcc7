"""Bronze: orders from two channels, appended by two flows into one streaming table.

On parquet, Spark's file sink keeps one writer's log only, so sdp-expect refuses a
second flow (SDPX-DEF-112); a Delta table takes every flow's commits.
"""

import os

from pyspark.sql import DataFrame, SparkSession

from sdp_expect import dlt

# Spark 4.1 does not inject `spark` into pipeline files.
spark = SparkSession.active()

DATA = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
SCHEMA = "order_id INT, customer STRING, amount DOUBLE, order_date DATE"

dlt.create_streaming_table("orders_bronze", comment="Raw orders of every channel",
                           format="delta")


@dlt.append_flow(target="orders_bronze")
def web_orders() -> DataFrame:
    return spark.readStream.option("header", "true").schema(SCHEMA).csv(f"{DATA}/web")


@dlt.append_flow(target="orders_bronze")
def shop_orders() -> DataFrame:
    return spark.readStream.option("header", "true").schema(SCHEMA).csv(f"{DATA}/shop")
