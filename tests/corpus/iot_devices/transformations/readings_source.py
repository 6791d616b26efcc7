"""Sensor readings as they land (cloud_files(...) in the original notebook)."""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sdp_expect import pipelines as dp

spark = SparkSession.active()

LANDING = spark.conf.get("corpus.landing")


@dp.table(comment="Raw sensor readings")
def device_readings_landing() -> DataFrame:
    return (
        spark.readStream.format("json")
        .schema("device_id STRING, ts STRING, temperature_c DECIMAL(5,1), battery_pct INT")
        .load(f"{LANDING}/readings")
        .withColumns({"reading_ts": F.to_timestamp("ts"), "reading_date": F.to_date("ts")})
        .drop("ts")
    )
