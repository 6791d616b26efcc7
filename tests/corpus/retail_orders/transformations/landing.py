"""The files as they land: on Databricks, STREAM read_files(...) in the SQL notebooks.

Open-source Spark has no read_files, so the streaming sources are read here.
"""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from sdp_expect import pipelines as dp

spark = SparkSession.active()

LANDING = spark.conf.get("corpus.landing")

ORDER_SCHEMA = StructType([
    StructField("order_id", IntegerType()),
    StructField("cust_id", IntegerType()),
    StructField("channel", StringType()),
    StructField("order_ts", StringType()),
])


@dp.table(comment="Orders from the shop's order service")
def orders_landing() -> DataFrame:
    return (
        spark.readStream.format("json")
        .schema(ORDER_SCHEMA)
        .load(f"{LANDING}/orders")
        .withColumnRenamed("cust_id", "customer_id")
        .withColumn("order_date", F.to_date("order_ts"))
    )


@dp.table(comment="Order lines, one CSV file per export")
def order_items_landing() -> DataFrame:
    return (
        spark.readStream.format("csv")
        .option("header", "true")
        .schema("order_id INT, sku STRING, qty INT, unit_price DECIMAL(10,2)")
        .load(f"{LANDING}/order_items")
        .withColumnRenamed("qty", "quantity")
    )
