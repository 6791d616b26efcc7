"""All applications in one table, scored against the bureau data."""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sdp_expect import pipelines as dp

spark = SparkSession.active()

COLUMNS = ["application_id", "applicant_id", "region", "requested_amount", "annual_income",
           "purpose", "submitted_on"]


@dp.materialized_view(comment="Applications of both regions")
@dp.expect_from_file("../rules/applications.yml")
def applications() -> DataFrame:
    east = spark.read.table("applications_east").select(*COLUMNS)
    west = spark.read.table("applications_west").select(*COLUMNS)
    return east.unionByName(west)


@dp.materialized_view(comment="Applications with a risk band")
@dp.expect_from_file("../rules/risk.yml")
def risk_scores() -> DataFrame:
    scored = spark.read.table("applications").join(
        spark.read.table("bureau_scores"), "applicant_id", "left")
    return (
        scored.withColumn("debt_to_income_pct",
                          F.expr("requested_amount * 100 div nullif(annual_income, 0)"))
        .withColumn("risk_band", F.expr(
            "CASE WHEN credit_score >= 720 AND delinquencies = 0 THEN 'low' "
            "WHEN credit_score >= 640 THEN 'medium' ELSE 'high' END"))
        .drop("purpose", "submitted_on")
        .select("application_id", "applicant_id", "region", "requested_amount",
                "annual_income", "credit_score", "delinquencies", "debt_to_income_pct",
                "risk_band")
    )


@dp.materialized_view(comment="Applications and amounts per region and risk band")
def risk_band_summary() -> DataFrame:
    return (
        spark.read.table("risk_scores")
        .groupBy("region", "risk_band")
        .agg(F.count("*").alias("applications"),
             F.sum("requested_amount").alias("requested_total"))
    )
