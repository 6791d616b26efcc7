"""The drop-in surface: every name of pyspark.pipelines, typed and documented."""

from __future__ import annotations

import inspect
from pathlib import Path

import pyspark.pipelines as sdp

import sdp_expect
from sdp_expect import dlt
from sdp_expect import pipelines as dp

DECORATORS = ["expect", "expect_or_drop", "expect_or_fail", "expect_all",
              "expect_all_or_drop", "expect_all_or_fail"]


def test_every_pyspark_pipelines_name_is_available() -> None:
    for name in sdp.__all__:
        assert hasattr(dp, name), name
        assert name in dp.__all__


def test_names_sdp_expect_does_not_change_are_pyspark_s_own() -> None:
    for name in sdp.__all__:
        if name not in {"append_flow", "create_sink", "create_streaming_table",
                        "materialized_view", "table", "temporary_view",
                        "create_auto_cdc_flow"}:
            assert getattr(dp, name) is getattr(sdp, name)


def test_an_unknown_name_says_so() -> None:
    try:
        dp.no_such_thing  # noqa: B018
    except AttributeError as error:
        assert "no_such_thing" in str(error)
    else:
        raise AssertionError("expected AttributeError")


def test_dlt_offers_the_delta_live_tables_names() -> None:
    for name in ["table", "view", "read", "read_stream", "create_streaming_table",
                 "append_flow", *DECORATORS]:
        assert callable(getattr(dlt, name)), name


def test_public_functions_are_typed_and_documented() -> None:
    for module in (dp, dlt):
        for name in module.__all__:
            function = getattr(module, name)
            if getattr(function, "__module__", "").startswith("pyspark"):
                continue
            assert inspect.getdoc(function), f"{module.__name__}.{name} has no docstring"
            hints = inspect.signature(function)
            assert hints.return_annotation is not inspect.Signature.empty, name


def test_the_package_ships_py_typed() -> None:
    assert (Path(sdp_expect.__file__).parent / "py.typed").exists()


def test_every_error_code_is_documented() -> None:
    from sdp_expect.base.errors import ERROR_CATALOGUE

    documented = (Path(__file__).resolve().parent.parent / "docs" / "errors.md").read_text()
    for code, spec in ERROR_CATALOGUE.items():
        assert f"| {code} |" in documented, code
        assert spec.fix in documented, code
