"""What every layer uses: errors and their codes, companion names, settings, the project's spec,
the SQL tokenizer, user files, the Spark line, the definitions file, the violation lines, the
terminal. Nothing here imports pyspark or another sdp_expect package.
"""
