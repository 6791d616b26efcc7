"""Silver: loans and payments that pass the data-quality rules."""

from pyspark.sql import SparkSession

from sdp_expect import dlt

spark = SparkSession.active()

LANDING = spark.conf.get("corpus.landing")

LOAN_RULES_DROP = {
    "valid loan id": "loan_id IS NOT NULL",
    "positive amount": "loan_amount > 0",
}


@dlt.table(comment="Loans with an id and an amount; odd rates are kept and counted")
@dlt.quarantine()
@dlt.expect("rate within policy", "int_rate_pct BETWEEN 5 AND 25")
@dlt.expect_all_or_drop(LOAN_RULES_DROP)
@dlt.expect_or_fail("known status", "status IN ('current', 'late', 'paid_off', 'charged_off')")
def loans_clean():
    return dlt.read_stream("LIVE.loans_raw")


dlt.create_streaming_table(
    "payments",
    comment="Payments received, from the payment processor's CSV drops",
    expect_all={"paid in 2024": "paid_on >= DATE'2024-01-01'"},
    expect_all_or_drop={
        "payment has loan": "loan_id IS NOT NULL",
        "positive payment": "paid_amount > 0",
    },
    quarantine=True,
)


@dlt.append_flow(target="payments")
def payments_from_processor():
    return (
        spark.readStream.format("csv")
        .option("header", "true")
        .schema("payment_id STRING, loan_id INT, amount DECIMAL(10,2), paid_on DATE")
        .load(f"{LANDING}/payments")
        .withColumnRenamed("amount", "paid_amount")
    )
