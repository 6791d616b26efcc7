# Databricks notebook source
# MAGIC %md
# MAGIC # Station status
# MAGIC
# MAGIC Status reports of the docking stations arrive every few minutes from two feeds:
# MAGIC our own system (`status_main`) and a partner operator (`status_partner`, other
# MAGIC column names). The pipeline unions them, checks them, and keeps the latest
# MAGIC status of every station.

# COMMAND ----------

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from sdp_expect import dlt

spark = SparkSession.active()

landing = spark.conf.get("corpus.landing")

# COMMAND ----------

# MAGIC %md
# MAGIC ## Bronze: the two feeds, as they land

# COMMAND ----------

main_schema = (
    "station_id STRING, num_bikes_available INT, num_docks_available INT, "
    "status STRING, last_reported STRING"
)


@dlt.table(comment="Status reports of our own stations")
def status_main():
    return (
        spark.readStream.format("json")
        .schema(main_schema)
        .load(f"{landing}/status_main")
        .withColumn("reported_at", F.to_timestamp("last_reported"))
        .withColumn("feed", F.lit("main"))
        .drop("last_reported")
    )


@dlt.table(comment="Status reports of the partner's stations")
def status_partner():
    return (
        spark.readStream.format("json")
        .schema("stationId STRING, bikes INT, docks INT, state STRING, ts STRING")
        .load(f"{landing}/status_partner")
        .withColumnRenamed("stationId", "station_id")
        .withColumnRenamed("bikes", "num_bikes_available")
        .withColumnRenamed("docks", "num_docks_available")
        .withColumnRenamed("state", "status")
        .withColumns({"reported_at": F.to_timestamp("ts"), "feed": F.lit("partner")})
        .drop("ts")
    )


# COMMAND ----------

# MAGIC %md
# MAGIC ## Silver: one checked stream of reports

# COMMAND ----------


@dlt.table(comment="Reports of both feeds that name a station and a time")
@dlt.expect_all({
    "bikes not negative": "num_bikes_available >= 0",
    "docks not negative": "num_docks_available >= 0",
})
@dlt.expect_all_or_drop({
    "station id present": "station_id IS NOT NULL",
    "reported time present": "reported_at IS NOT NULL",
})
@dlt.expect_or_fail("status is known", "status IN ('active', 'maintenance')")
def status_clean():
    return dlt.read_stream("status_main").unionByName(dlt.read_stream("status_partner"))


@dlt.table(comment="Station directory of both operators")
def station_info():
    return (
        spark.read.format("json")
        .schema("station_id STRING, name STRING, capacity INT")
        .load(f"{landing}/station_info")
        .withColumnRenamed("capacity", "total_docks")
    )


# COMMAND ----------

# MAGIC %md
# MAGIC ## Gold: latest status per station, bikes per feed

# COMMAND ----------


@dlt.table(comment="The latest report of every station, checked against its capacity")
@dlt.expect("has bikes", "num_bikes_available > 0")
@dlt.expect_or_drop("fits capacity", "num_bikes_available + num_docks_available <= total_docks")
def station_latest():
    status = dlt.read("status_clean")
    latest = status.groupBy("station_id").agg(F.max("reported_at").alias("reported_at"))
    return (
        status.join(latest, ["station_id", "reported_at"], "inner")
        .join(dlt.read("station_info").dropDuplicates(["station_id"]), "station_id", "left")
        .select(
            "station_id",
            "name",
            "num_bikes_available",
            "num_docks_available",
            "total_docks",
            "status",
            "reported_at",
            "feed",
        )
    )


@dlt.view
def active_reports():
    return dlt.read("status_clean").filter(F.col("status") == "active")


@dlt.table(comment="Bikes reported by active stations, per feed")
def bikes_by_feed():
    return (
        dlt.read("active_reports")
        .groupBy("feed")
        .agg(F.count("*").alias("reports"), F.sum("num_bikes_available").alias("bikes"))
    )
