"""``sdp-expect validate``'s outputs for other tools: GitHub Actions annotations and SARIF.

Both are written from the issues' values (code, file, line, column, message), never
from the text report. ``github`` is one workflow command per error, which GitHub
Actions shows on the file and line of a pull request
(https://docs.github.com/actions/reference/workflow-commands-for-github-actions);
``sarif`` is a SARIF 2.1.0 log (the OASIS standard that code-scanning tools read),
one result per error, each rule described by the error catalogue.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from sdp_expect.base.errors import ERROR_CATALOGUE
from sdp_expect.checks.results import ValidationIssue

__all__ = ["SARIF_SCHEMA", "to_github", "to_sarif"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _escape_data(text: str) -> str:
    # GitHub's escaping of a workflow command's message
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    # ... and of a property value, which ':' and ',' would end
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sdp-expect")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"


def to_github(errors: Sequence[ValidationIssue]) -> str:
    """One ``::error file=...,line=...,col=...,title=CODE::message`` line per error."""
    lines = []
    for issue in errors:
        properties = [f"file={_escape_property(issue.file)}"]
        if issue.line is not None:
            properties.append(f"line={issue.line}")
            if issue.column is not None:
                properties.append(f"col={issue.column}")
        properties.append(f"title={_escape_property(issue.code)}")
        where = f"{issue.rule}: " if issue.rule else ""
        lines.append(f"::error {','.join(properties)}::"
                     f"{_escape_data(f'[{issue.code}] {where}{issue.message}')}")
    return "".join(f"{line}\n" for line in lines)


def to_sarif(errors: Sequence[ValidationIssue]) -> str:
    """A SARIF 2.1.0 log with one run of sdp-expect and one result per error."""
    codes = sorted({issue.code for issue in errors})
    rules = []
    for code in codes:
        spec = ERROR_CATALOGUE.get(code)
        rule: dict[str, Any] = {"id": code}
        if spec is not None:
            rule["shortDescription"] = {"text": spec.title}
            rule["help"] = {"text": spec.fix}
        rules.append(rule)
    results = []
    for issue in errors:
        location: dict[str, Any] = {"artifactLocation": {"uri": issue.file.replace("\\", "/")}}
        if issue.line is not None:
            region = {"startLine": issue.line}
            if issue.column is not None:
                region["startColumn"] = issue.column
            location["region"] = region
        where = f"{issue.rule}: " if issue.rule else ""
        results.append({
            "ruleId": issue.code,
            "ruleIndex": codes.index(issue.code),
            "level": "error",
            "message": {"text": f"{where}{issue.message}"},
            "locations": [{"physicalLocation": location}],
        })
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "sdp-expect", "version": _version(), "rules": rules}},
            "results": results,
        }],
    }
    return json.dumps(log, indent=2) + "\n"
