"""Bronze: the raw orders, read as they come from a CSV file."""

import os

from pyspark.sql import DataFrame

from sdp_expect import pipelines as dp

# Spark 4.2+ injects `spark` into every pipeline file.

ORDERS_CSV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "orders.csv")


@dp.materialized_view(comment="Raw orders, bad rows included")
def orders_bronze() -> DataFrame:
    return (
        spark.read.option("header", "true")
        .schema("order_id INT, customer STRING, amount DOUBLE, order_date DATE")
        .csv(os.path.normpath(ORDERS_CSV))
    )
