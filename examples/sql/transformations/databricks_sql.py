"""The Databricks SQL files of databricks_sql/, translated for open-source SDP.

`sdp-expect translate databricks_sql/*.sql` prints the SQL they become.
"""

from sdp_expect import sql

sql.include("../databricks_sql/")
