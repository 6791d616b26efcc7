"""The emitters of a plan: ``python`` (pyspark.pipelines calls over DataFrames) and ``sql``
(open-source SDP SQL text, for ``sql.include`` and ``sdp-expect translate``).
"""
