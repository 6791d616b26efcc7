"""The runtime of ``sdp-expect run``: the project's Spark Connect server (``local_server``), the
pipeline's child process (``spark_pipelines``, ``pipelines_client``), its output (``run_output``,
``progress``) and the way to a project's catalog (``catalog_access``).
"""
