"""The Spark-free core: the model of rules (``model``), the static check of a constraint
(``constraint_check``), the SQL of rule logic (``compiler``) and the planner of the companion graph
(``planner``). Nothing here imports pyspark.
"""
