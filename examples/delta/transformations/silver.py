"""Silver: orders that pass the data-quality rules, as a Lakeflow pipeline writes them.

- `recent` warns: old orders are kept, and counted.
- `valid_id` and `valid_amount` drop: those orders go to orders_silver_quarantine.
A NULL result is a violation: an order without an amount fails `valid_amount`.
"""

from pyspark.sql import DataFrame, SparkSession

from sdp_expect import dlt

spark = SparkSession.active()


@dlt.table(comment="Orders with an id and a non-negative amount", format="delta")
@dlt.expect("recent", "order_date >= '2020-01-01'")
@dlt.expect_all_or_drop({"valid_id": "order_id IS NOT NULL", "valid_amount": "amount >= 0"})
def orders_silver() -> DataFrame:
    return spark.read.table("orders_bronze")
