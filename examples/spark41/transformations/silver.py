"""Silver: orders that pass the data-quality rules of rules/orders_silver.yml.

- `recent` warns: old orders are kept, and counted.
- `valid_id` and `valid_amount` drop: those orders go to orders_silver_quarantine.
A NULL result is a violation: an order without an amount fails `valid_amount`.
"""

from pyspark.sql import DataFrame, SparkSession

from sdp_expect import pipelines as dp

spark = SparkSession.active()


@dp.materialized_view(comment="Orders with an id and a non-negative amount")
@dp.expect_from_file("../rules/orders_silver.yml")
def orders_silver() -> DataFrame:
    return spark.read.table("orders_bronze")
