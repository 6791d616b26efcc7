from sdp_expect import sql

sql.include("../sql_notebooks/*.sql")
