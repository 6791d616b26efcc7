"""Clean trips, with the rules the operations team agreed on."""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sdp_expect import pipelines as dp

spark = SparkSession.active()


@dp.table(comment="Trips with an id and a positive duration")
@dp.quarantine()
@dp.expect("known bike type", "bike_type IN ('classic_bike', 'electric_bike')")
@dp.expect_or_drop("ride has id", "ride_id IS NOT NULL")
@dp.expect_or_drop("ends after start", "duration_min > 0")
@dp.expect_or_fail("has start station", "start_station IS NOT NULL")
def rides_clean() -> DataFrame:
    # The docking system pads nothing today; trimmed all the same.
    return spark.readStream.table("rides_raw").withColumn("bike_type", F.trim("bike_type"))
