"""Gold: revenue per customer, guarded by a rule that must hold.

If a negative total ever reached gold, the update would fail with
[EXPECTATION_VIOLATION] and the record, and nothing would be written.
"""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sdp_expect import dlt

spark = SparkSession.active()


@dlt.table(comment="Revenue per customer", format="delta")
@dlt.expect_or_fail("revenue_not_negative", "revenue >= 0")
def revenue_by_customer() -> DataFrame:
    return (
        spark.read.table("orders_silver")
        .groupBy("customer")
        .agg(F.sum("amount").alias("revenue"), F.count(F.lit(1)).alias("orders"))
    )
