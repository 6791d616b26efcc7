"""Applications from the east and west systems (CSV, different layouts), bureau scores (JSON)."""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sdp_expect import pipelines as dp

spark = SparkSession.active()

LANDING = spark.conf.get("corpus.landing")


@dp.table(comment="Applications from the east region's system")
def applications_east() -> DataFrame:
    return (
        spark.readStream.format("csv")
        .option("header", "true")
        .schema("app_no STRING, applicant_id STRING, requested_amount INT, annual_income INT, "
                "purpose STRING, submitted_on DATE")
        .load(f"{LANDING}/applications_east")
        .withColumnRenamed("app_no", "application_id")
        .withColumn("region", F.lit("east"))
    )


@dp.table(comment="Applications from the west region's system (another layout)")
def applications_west() -> DataFrame:
    return (
        spark.readStream.format("csv")
        .option("header", "true")
        .schema("applicant STRING, application STRING, income_usd INT, amount_requested INT, "
                "purpose STRING, submitted_on DATE")
        .load(f"{LANDING}/applications_west")
        .withColumnsRenamed({
            "applicant": "applicant_id",
            "application": "application_id",
            "income_usd": "annual_income",
            "amount_requested": "requested_amount",
        })
        .withColumn("region", F.lit("west"))
    )


@dp.temporary_view(comment="Latest bureau scores; an applicant without a score is left out")
@dp.expect_or_drop("score present", "credit_score IS NOT NULL")
def bureau_scores() -> DataFrame:
    return (
        spark.read.format("json")
        .schema("applicant_id STRING, credit_score INT, delinquencies INT")
        .load(f"{LANDING}/bureau")
        .fillna({"delinquencies": 0})
    )
