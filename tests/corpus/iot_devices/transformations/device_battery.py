"""Battery levels per device and day, from the cleaned readings of the SQL notebook,
written the way the team's PySpark notebooks are."""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sdp_expect import pipelines as dp

spark = SparkSession.active()


@dp.materialized_view(comment="One row per device, day and reported battery level")
@dp.expect_or_drop("battery level reported", "battery_level >= 0")
@dp.expect("battery not low", "NOT low_battery")
def device_battery() -> DataFrame:
    return (
        spark.read.table("readings_clean")
        .withColumnRenamed("battery_pct", "battery_level")
        .fillna({"battery_level": -1})
        .drop("reading_ts", "temperature_c")
        .dropDuplicates()
        .withColumn("low_battery", F.col("battery_level") < 20)
    )
