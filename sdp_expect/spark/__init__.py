"""The Spark side of defining a pipeline: ``registration`` (source locations, graph state),
``early_binding`` (the reads Spark would bind early), ``routing`` (the graph-only views that make
them wait); and ``own_process``, a Spark process of its own for a command's reading.
"""
