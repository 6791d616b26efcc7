from sdp_expect import pipelines as dp


def test_smoke(make_pipeline):
    def define(spark):
        @dp.materialized_view
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        def tgt():
            return spark.read.table("src")

    p = make_pipeline(define)
    p.create_table("src", [(1, 5), (None, 3)], "id int, amount int")
    r = p.run()
    assert r.ok, r.output
    print(r.rows("tgt"), r.rows("tgt_dq_metrics"))
    assert r.rows("tgt") == [{"id": 1, "amount": 5}]
