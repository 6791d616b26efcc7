"""``fillna`` and ``dropna`` on named columns over a pipeline dataset, as sdp-expect
rewrites them (:mod:`sdp_expect.spark.routing`: a graph-only view and expressions that know
no column type), against Spark itself as the oracle.

The law: for any table of integers, longs, doubles, floats, decimals, strings and
booleans (NULLs and NaN included) and any fill value (a number, a string, a boolean, or
a dictionary whose values may not match their columns' types), the pipeline's
``spark.read.table("bronze").fillna(value, subset)`` holds exactly what the same call
gives on a plain DataFrame of the same data outside SDP, with the same column types; and
where Spark refuses the call (a value it cannot cast), the pipeline's update fails
instead of writing anything. The same for ``dropna(how, thresh, subset)``.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any, Optional, Union

import pytest
from chispa import assert_df_equality
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession
from sdp_runner import MakePipeline

from sdp_expect import pipelines as dp

COLUMNS = {"i": "INT", "l": "BIGINT", "d": "DOUBLE", "f": "FLOAT", "m": "DECIMAL(10,2)",
           "s": "STRING", "b": "BOOLEAN"}
SCHEMA = "id INT, " + ", ".join(f"{name} {kind}" for name, kind in COLUMNS.items())

Row = tuple[Any, ...]
Fill = Union[int, float, str, bool, dict[str, Any]]

_NAN = float("nan")
_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "i": st.integers(-3, 3),
    "l": st.integers(-3, 3),
    "d": st.sampled_from([0.5, -1.25, _NAN]),
    "f": st.sampled_from([0.5, 2.0, _NAN]),
    "m": st.sampled_from([Decimal("1.25"), Decimal("-3.00")]),
    "s": st.sampled_from(["", "a", "x y"]),
    "b": st.booleans(),
}


@st.composite
def tables(draw: st.DrawFn) -> list[Row]:
    count = draw(st.integers(0, 5))
    return [(n, *(draw(st.one_of(st.none(), _VALUES[c])) for c in COLUMNS))
            for n in range(count)]


_FILLS: st.SearchStrategy[Any] = st.one_of(
    st.integers(-2, 9), st.sampled_from([1.5, -0.25, 3.0]), st.sampled_from(["z", "", "7"]),
    st.booleans())
_SUBSETS = st.lists(st.sampled_from(sorted(COLUMNS)), min_size=1, max_size=4, unique=True)


@st.composite
def fills(draw: st.DrawFn) -> tuple[Fill, Optional[list[str]]]:
    if draw(st.booleans()):
        return draw(_FILLS), draw(_SUBSETS)
    columns = draw(_SUBSETS)
    return {c: draw(_FILLS) for c in columns}, None


def spark_result(frame: DataFrame) -> Optional[DataFrame]:
    """``frame``'s rows collected as a new DataFrame of the same schema, or None where
    Spark refuses to compute it (an exception while collecting)."""
    try:
        rows = frame.collect()
    except Exception:  # any refusal of Spark's is the oracle's "fails"
        return None
    spark = frame.sparkSession
    return spark.createDataFrame(rows, frame.schema)


def check(make_pipeline: MakePipeline, data: list[Row], method: str, args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        def bronze() -> DataFrame:
            return spark.read.table("src")

        @dp.materialized_view
        def silver() -> DataFrame:
            frame: DataFrame = getattr(spark.read.table("bronze"), method)(*args, **kwargs)
            return frame

    pipeline = make_pipeline(define)
    pipeline.create_table("src", data, SCHEMA)
    source = pipeline.spark.read.table(f"`{pipeline.database}`.`src`")
    expected = spark_result(getattr(source, method)(*args, **kwargs))
    result = pipeline.run()
    if expected is None:
        assert not result.ok, "Spark refuses the call, the pipeline wrote silver"
        assert result.flow_state("silver") == "FAILED"
        return
    assert result.ok, result.output
    assert_df_equality(result.table("silver"), expected, ignore_row_order=True,
                       ignore_nullable=True, allow_nan_equality=True)


ROWS = [(0, None, None, None, None, None, None, None),
        (1, 1, 2, _NAN, _NAN, Decimal("1.25"), "a", True),
        (2, None, 3, 0.5, None, None, None, False)]


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=tables(), fill=fills())
@example(data=ROWS, fill=(1.5, ["i", "d", "f", "m", "s"]))   # a float into INT and DECIMAL
@example(data=ROWS, fill=("z", ["s", "i"]))                  # a string fills strings only
@example(data=ROWS, fill=(True, ["b", "l"]))                 # a boolean fills booleans only
@example(data=ROWS, fill=({"i": "7", "s": 1, "b": False, "d": 2}, None))  # cast per column
@example(data=ROWS, fill=({"i": "z"}, None))                 # Spark cannot cast: fails
def test_fillna_on_named_columns_is_what_spark_gives(
        make_pipeline: MakePipeline, data: list[Row],
        fill: tuple[Fill, Optional[list[str]]]) -> None:
    value, subset = fill
    check(make_pipeline, data, "fillna", (value,), {} if subset is None else {"subset": subset})


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=tables(), how=st.sampled_from(["any", "all"]),
       thresh=st.one_of(st.none(), st.integers(0, 4)), subset=_SUBSETS)
@example(data=ROWS, how="any", thresh=None, subset=["d", "i"])    # NaN counts as missing
@example(data=ROWS, how="all", thresh=None, subset=["f", "m"])
@example(data=ROWS, how="any", thresh=2, subset=["i", "l", "d", "s"])
def test_dropna_on_named_columns_is_what_spark_gives(
        make_pipeline: MakePipeline, data: list[Row], how: str, thresh: Optional[int],
        subset: list[str]) -> None:
    check(make_pipeline, data, "dropna", (), {"how": how, "thresh": thresh, "subset": subset})


@pytest.mark.parametrize("subset", [["d", "f"], ["d", "f", "i"]])
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_a_fill_value_json_cannot_write_is_what_spark_gives(
        make_pipeline: MakePipeline, value: float, subset: list[str]) -> None:
    # JSON has no NaN or infinity: the value reaches the column's type another way.
    check(make_pipeline, ROWS, "fillna", (value,), {"subset": subset})
