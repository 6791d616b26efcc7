"""Bronze: the raw orders from a CSV file, as a table and as a stream.

Databricks SQL would read them with read_files(), which open-source Spark does
not have; reading files is the part of the pipeline written in Python.
"""

import os

from pyspark.sql import DataFrame, SparkSession

from sdp_expect import pipelines as dp

# Spark 4.1 does not inject `spark` into pipeline files.
spark = SparkSession.active()

DATA = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
SCHEMA = "order_id INT, customer STRING, amount DOUBLE, order_date DATE"


@dp.materialized_view(comment="Raw orders, bad rows included")
def orders_bronze() -> DataFrame:
    return spark.read.option("header", "true").schema(SCHEMA).csv(DATA)


@dp.table(comment="Raw orders as they arrive, bad rows included")
def orders_feed() -> DataFrame:
    return spark.readStream.option("header", "true").schema(SCHEMA).csv(DATA)
