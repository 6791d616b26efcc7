"""The Delta Live Tables names (``import dlt``) on open-source SDP.

Replace ``import dlt`` with ``from sdp_expect import dlt``. As in Delta Live
Tables, :func:`table` over a batch query makes a materialized view and over a
streaming query a streaming table; :func:`view` makes a temporary view.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Union, overload

from pyspark.pipelines.source_code_location import get_caller_source_code_location
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from sdp_expect.pipelines import (
    QueryFunction,
    aggregate,
    append_flow,
    create_sink,
    create_streaming_table,
    dataset_decorator,
    expect,
    expect_all,
    expect_all_or_drop,
    expect_all_or_fail,
    expect_from_file,
    expect_or_drop,
    expect_or_fail,
    metrics,
    quarantine,
    references,
    row_count,
    temporary_view,
    unique,
)

__all__ = [
    "aggregate",
    "append_flow",
    "create_sink",
    "create_streaming_table",
    "expect",
    "expect_all",
    "expect_all_or_drop",
    "expect_all_or_fail",
    "expect_from_file",
    "expect_or_drop",
    "expect_or_fail",
    "metrics",
    "quarantine",
    "read",
    "read_stream",
    "references",
    "row_count",
    "table",
    "unique",
    "view",
]

view = temporary_view
"""``@dlt.view``: a temporary view (same as ``pipelines.temporary_view``)."""


@overload
def table(query_function: QueryFunction) -> None: ...


@overload
def table(
    *,
    query_function: None = None,
    name: Optional[str] = None,
    comment: Optional[str] = None,
    spark_conf: Optional[Dict[str, str]] = None,
    table_properties: Optional[Dict[str, str]] = None,
    partition_cols: Optional[List[str]] = None,
    cluster_by: Optional[List[str]] = None,
    schema: Optional[Union[StructType, str]] = None,
    format: Optional[str] = None,
) -> Callable[[QueryFunction], None]: ...


def table(
    query_function: Optional[QueryFunction] = None,
    *,
    name: Optional[str] = None,
    comment: Optional[str] = None,
    spark_conf: Optional[Dict[str, str]] = None,
    table_properties: Optional[Dict[str, str]] = None,
    partition_cols: Optional[List[str]] = None,
    cluster_by: Optional[List[str]] = None,
    schema: Optional[Union[StructType, str]] = None,
    format: Optional[str] = None,
) -> Union[Callable[[QueryFunction], None], None]:
    """(Return a) decorator that defines a table, as ``@dlt.table`` does.

    A batch query makes a materialized view, a streaming query
    (``spark.readStream...``, ``dlt.read_stream``) a streaming table. The kind
    is read from the query's plan; Spark is not asked to analyse it.

    :param query_function: The query function, passed implicitly when used bare.
    :param name: The dataset's name; default the function's name.
    :param comment: Description of the dataset.
    :param spark_conf: Spark confs set when the flow runs.
    :param table_properties: Table properties.
    :param partition_cols: Partition columns.
    :param cluster_by: Clustering columns.
    :param schema: Explicit schema (StructType or DDL string).
    :param format: Table format, e.g. ``"parquet"``.
    """
    return dataset_decorator(None, query_function, get_caller_source_code_location(stacklevel=1),
                             name=name, comment=comment, spark_conf=spark_conf,
                             table_properties=table_properties, partition_cols=partition_cols,
                             cluster_by=cluster_by, schema=schema, format=format)


def _dataset_name(name: str) -> str:
    """``LIVE.x`` (the Delta Live Tables prefix for datasets of the pipeline) is ``x``."""
    return name[5:] if name[:5].upper() == "LIVE." else name


def read(name: str) -> DataFrame:
    """Read a dataset of the pipeline as a batch: ``spark.read.table(name)``.

    :param name: The dataset's name; a ``LIVE.`` prefix is accepted and removed.
    """
    return SparkSession.active().read.table(_dataset_name(name))


def read_stream(name: str) -> DataFrame:
    """Read a dataset of the pipeline as a stream: ``spark.readStream.table(name)``.

    :param name: The dataset's name; a ``LIVE.`` prefix is accepted and removed.
    """
    return SparkSession.active().readStream.table(_dataset_name(name))


def __getattr__(attribute: str) -> Any:
    """Anything else ``sdp_expect.pipelines`` offers (and so ``pyspark.pipelines``)."""
    from sdp_expect import pipelines

    return getattr(pipelines, attribute)
