"""The Databricks SQL notebooks of ../notebooks, translated for open-source SDP."""

from sdp_expect import sql

sql.include("../notebooks/")
