"""Bronze: loan applications and branch reference data, as they land."""

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DecimalType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from sdp_expect import dlt

spark = SparkSession.active()

LANDING = spark.conf.get("corpus.landing")

APPLICATION_SCHEMA = StructType([
    StructField("loan_id", IntegerType()),
    StructField("member_id", StringType()),
    StructField("amt", DecimalType(10, 2)),
    StructField("int_rate_pct", DecimalType(5, 2)),
    StructField("term_months", IntegerType()),
    StructField("grade", StringType()),
    StructField("branch", StringType()),
    StructField("status", StringType()),
    StructField("issued", StringType()),
])


@dlt.table(comment="Raw loan applications, one JSON document per line")
def loans_raw():
    return (
        spark.readStream.format("json")
        .schema(APPLICATION_SCHEMA)
        .load(f"{LANDING}/loan_applications")
        .withColumnRenamed("amt", "loan_amount")
        .withColumns({
            "grade": F.upper(F.trim(F.col("grade"))),
            "issued_date": F.to_date(F.col("issued")),
        })
        .drop("issued")
    )


@dlt.view(comment="Branches of the lender (a CSV export from the branch register)")
def branches():
    return (
        spark.read.format("csv")
        .option("header", "true")
        .schema("branch_code STRING, branch_name STRING, state STRING")
        .load(f"{LANDING}/branches")
        .withColumnRenamed("branch_code", "branch")
    )
