"""Raw trips (CSV exports, one file per drop) and the station directory (JSON)."""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sdp_expect import pipelines as dp

spark = SparkSession.active()

LANDING = spark.conf.get("corpus.landing")
RIDE_SCHEMA = (
    "ride_id STRING, rideable_type STRING, started_at TIMESTAMP, ended_at TIMESTAMP, "
    "start_station STRING, end_station STRING, member_casual STRING"
)


@dp.table(comment="Trips as exported by the docking system")
def rides_raw() -> DataFrame:
    return (
        spark.readStream.format("csv")
        .option("header", "true")
        .schema(RIDE_SCHEMA)
        .load(f"{LANDING}/rides")
        .withColumnRenamed("rideable_type", "bike_type")
        .withColumnRenamed("member_casual", "member_type")
        .withColumns({
            "ride_date": F.to_date("started_at"),
            "duration_min": (
                (F.unix_timestamp("ended_at") - F.unix_timestamp("started_at")) / 60
            ).cast("int"),
        })
    )


@dp.materialized_view(comment="Station directory")
@dp.expect("capacity known", "capacity > 0")
def stations() -> DataFrame:
    return (
        spark.read.format("json")
        .schema("station_id STRING, name STRING, capacity INT")
        .load(f"{LANDING}/stations")
        .withColumnRenamed("name", "station_name")
        .fillna({"capacity": 0})
    )
