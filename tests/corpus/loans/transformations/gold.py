"""Gold: balances per loan and exposure per branch."""

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from sdp_expect import dlt

spark = SparkSession.active()


@dlt.table(comment="What each loan still owes; a negative balance must never be published")
@dlt.expect("has payments", "payment_count > 0")
@dlt.expect_or_fail("balance not negative", "outstanding >= 0")
def loan_balances():
    paid = (
        dlt.read("payments")
        .groupBy("loan_id")
        .agg(F.sum("paid_amount").alias("paid"), F.count("*").alias("payments"))
    )
    return (
        dlt.read("loans_clean")
        .join(paid, "loan_id", "left")
        .fillna({"paid": 0, "payments": 0})
        .withColumnRenamed("paid", "total_paid")
        .withColumnsRenamed({"payments": "payment_count"})
        .withColumn("outstanding", F.col("loan_amount") - F.col("total_paid"))
        .select("loan_id", "member_id", "loan_amount", "total_paid", "payment_count",
                "outstanding")
    )


@dlt.table(comment="Loans and amounts per branch")
@dlt.expect("branch is known", "branch_name IS NOT NULL")
def loans_by_branch():
    return (
        dlt.read("loans_clean")
        .join(dlt.read("branches"), "branch", "left")
        .groupBy("branch", "branch_name", "state")
        .agg(F.count("*").alias("loans"), F.sum("loan_amount").alias("total_amount"))
    )


@dlt.table(comment="Late loans with their branch")
def late_loans():
    return (
        dlt.read("loans_clean")
        .filter(F.col("status") == "late")
        .join(dlt.read("branches"), "branch", "inner")
        .select("loan_id", "member_id", "branch_name", "state", "loan_amount")
    )
