"""``sdp-expect validate`` and the checks it shares with ``run``: rule files and Databricks SQL
files (``validate``, ``sql_files``, ``results``), the project's layout (``layout``), the outputs for
other tools (``formats``). Nothing here imports pyspark.
"""
