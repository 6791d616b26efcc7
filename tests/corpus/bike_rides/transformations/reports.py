"""Station flows per day and usage per member type."""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sdp_expect import pipelines as dp

spark = SparkSession.active()


@dp.materialized_view(comment="Departures and arrivals per station and day")
@dp.expect("station known", "station_name IS NOT NULL")
def station_daily_flow() -> DataFrame:
    rides = spark.read.table("rides_clean")
    departures = rides.groupBy(F.col("start_station").alias("station_id"), "ride_date").agg(
        F.count("*").alias("departures"))
    arrivals = (
        rides.filter(F.col("end_station").isNotNull())
        .groupBy(F.col("end_station").alias("station_id"), "ride_date")
        .agg(F.count("*").alias("arrivals"))
    )
    flows = departures.join(arrivals, ["station_id", "ride_date"], "full")
    return flows.join(
        spark.read.table("stations").dropDuplicates(["station_id"]).drop("capacity"),
        "station_id", "left"
    ).select(
        "station_id",
        "station_name",
        "ride_date",
        F.coalesce("departures", F.lit(0)).alias("departures"),
        F.coalesce("arrivals", F.lit(0)).alias("arrivals"),
        (F.coalesce("arrivals", F.lit(0)) - F.coalesce("departures", F.lit(0))).alias("net"),
    )


@dp.materialized_view(comment="Rides and minutes per member type")
def member_usage() -> DataFrame:
    return (
        spark.read.table("rides_clean")
        .drop("bike_type", "start_station", "end_station")
        .groupBy("member_type")
        .agg(
            F.count("*").alias("rides"),
            F.sum("duration_min").alias("total_minutes"),
            F.max("duration_min").alias("longest_minutes"),
        )
    )
