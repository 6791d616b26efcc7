"""Order lines for the finance export, read from the SQL notebook's silver table and
shaped the way the finance team's PySpark jobs shape them."""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sdp_expect import pipelines as dp

spark = SparkSession.active()


@dp.table(comment="Order lines in cents, as the finance export wants them")
@dp.expect_or_drop("order known", "order_id IS NOT NULL")
@dp.expect("regular quantity", "qty < 10")
def order_lines_export() -> DataFrame:
    return (
        spark.readStream.table("order_items_silver")
        .withColumnRenamed("quantity", "qty")
        .withColumn("line_total_cents", (F.col("line_total") * 100).cast("bigint"))
        .drop("unit_price", "line_total")
    )
