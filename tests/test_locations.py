"""An error's place is a value (file, line, column, rule), never text read back.

The SQL reader gives every error a :class:`~sdp_expect.base.errors.Location`;
``validate`` and ``migrate`` read its fields. The coded error that stops a
pipeline's definition is recorded, as values, in the definitions file that
``sdp-expect run`` / ``dry-run`` read (``definition_errors`` of ``--format json``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Optional

from cli_helpers import repo_env
from hypothesis import given
from hypothesis import strategies as st

from sdp_expect.base.definitions import DEFINITIONS_VARIABLE
from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.checks.sql_files import check_sql_file
from sdp_expect.dbsql.parse import check

FILES = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=20)
NUMBERS = st.one_of(st.none(), st.integers(min_value=1, max_value=10**6))


@given(FILES, NUMBERS, NUMBERS, NUMBERS)
def test_a_location_comes_back_from_its_json_values(file: str, line: Optional[int],
                                                    column: Optional[int],
                                                    rule: Optional[int]) -> None:
    place = Location(file, line, column, rule)
    assert Location.from_dict(json.loads(json.dumps(place.as_dict()))) == place
    # what people read: file:line[:column], or file, rule N
    shown = str(place)
    if rule is not None:
        assert shown == f"{file}, rule {rule}"
    elif line is None:
        assert shown == file
    else:
        assert shown == f"{file}:{line}" + ("" if column is None else f":{column}")


def test_an_error_keeps_its_place_as_values_and_its_text_as_before() -> None:
    error = SdpExpectError("SDPX-SQL-302", "an unclosed quote", dataset="orders",
                           location=Location("a.sql", 3, 7))
    assert error.place == Location("a.sql", 3, 7)
    assert error.location == "a.sql:3:7"
    assert error.render() == ("[SDPX-SQL-302] a.sql:3:7, dataset 'orders': an unclosed "
                              f"quote. Fix: {error.fix}.")
    assert error.render(with_location=False) == (
        f"[SDPX-SQL-302] dataset 'orders': an unclosed quote. Fix: {error.fix}.")
    assert error.as_dict()["place"] == {"file": "a.sql", "line": 3, "column": 7}
    # a place given as text (a Python location as pyspark gives it) has no values
    assert SdpExpectError("SDPX-SQL-302", location="p.py:4").place is None


SQL = """\
CREATE OR REFRESH MATERIALIZED VIEW a (
  CONSTRAINT ok EXPECT (x > 0),
  CONSTRAINT bad EXPECT (count(*) > 0)
) AS SELECT * FROM src;

CREATE OR REFRESH MATERIALIZED VIEW b
LOCATION '/x' AS SELECT 1;
"""


def test_every_sql_error_has_its_place_and_validate_shows_those_values(tmp_path: Path) -> None:
    found = check(SQL, "p/q.sql")
    assert found.errors
    for error in found.errors:
        assert error.place is not None and error.place.file == "p/q.sql", error
        assert error.location == str(error.place)
    by_code = {error.code: error.place for error in found.errors}
    assert by_code["SDPX-VAL-010"] == Location("p/q.sql", 3)  # the CONSTRAINT's line
    assert by_code["SDPX-SQL-301"] == Location("p/q.sql", 7, 1)  # the LOCATION clause
    path = tmp_path / "q.sql"
    path.write_text(SQL)
    result = check_sql_file(str(path))
    places = {issue.code: issue.rule for issue in result.errors}
    assert places["SDPX-VAL-010"] == "line 3, dataset 'a', expectation 'bad'"
    assert places["SDPX-SQL-301"] == "line 7, column 1, dataset 'b'"


def test_the_error_that_stops_a_definition_is_recorded_as_values(tmp_path: Path) -> None:
    definitions = tmp_path / "definitions.jsonl"
    script = textwrap.dedent("""
        import sdp_expect.spark.registration  # installs the recorder (a definitions file is set)
        from sdp_expect.base.errors import Location, SdpExpectError
        try:
            raise SdpExpectError("SDPX-DEF-105", dataset="t", location=Location("f.py", 9))
        except SdpExpectError as error:
            raise RuntimeError("pyspark wraps it") from error
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**repo_env(), DEFINITIONS_VARIABLE: str(definitions)},
                          timeout=120)
    assert done.returncode == 1 and "SDPX-DEF-105" in done.stderr  # still printed
    entries = [json.loads(line) for line in definitions.read_text().splitlines()]
    assert [(e["kind"], e["code"], e["dataset"], e["place"]) for e in entries] == [
        ("error", "SDPX-DEF-105", "t", {"file": "f.py", "line": 9})]
