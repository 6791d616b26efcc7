"""The rules of a Python pipeline file, read from its source without importing it
(``sdp-expect validate``).

A pipeline file imported by ``spark-pipelines`` declares its rules with sdp-expect's
decorators and arguments; here they are read from Python's own syntax tree (``ast``:
nothing is imported or run, no Spark), through the names the file binds to
:mod:`sdp_expect.pipelines` or :mod:`sdp_expect.dlt` (``from sdp_expect import
pipelines as dp``, ``from sdp_expect import dlt``, ``from sdp_expect.pipelines import
expect``):

- ``expect``, ``expect_or_drop``, ``expect_or_fail`` (name, constraint, ``max_failed``),
- ``expect_all``, ``expect_all_or_drop``, ``expect_all_or_fail`` with a dict, and the
  same words as arguments of a dataset call (``create_streaming_table("orders",
  expect_all_or_drop={...})``),
- ``expect_from_file(path)``: the rule file, relative to the Python file's folder.

Each rule written with literals is checked by :func:`sdp_expect.core.model.make_expectation`,
the one check of a rule that decorators, SQL and rule files share, at the line and
column of its call; the decorator names come from :class:`~sdp_expect.core.model.Action`.
A rule whose name, constraint or tolerance is computed (a variable, an f-string, a key
rule such as ``dp.unique(...)``) is counted apart: it is checked when the pipeline is
defined.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.text_files import TextFileProblem, read_text
from sdp_expect.core.model import Action, make_expectation

__all__ = ["PYTHON_SYNTAX", "PythonRules", "RuleFileUse", "read_python_file",
           "read_python_rules"]

PYTHON_SYNTAX = "SDPX-PRJ-406"
"""The code of a Python file that does not parse (:func:`read_python_file`)."""

_MODULES = ("sdp_expect.pipelines", "sdp_expect.dlt")
"""The modules whose decorators declare rules."""
_SINGLE = {action.decorator: action for action in Action}
_GROUP = {action.group_decorator: action for action in Action}
_FROM_FILE = "expect_from_file"
_DATASET_CALLS = frozenset({"table", "materialized_view", "temporary_view", "view",
                            "create_streaming_table", "streaming_table"})
"""Calls that declare a dataset: their ``name=`` (or the function's name) names it."""
_UNKNOWN = object()
"""A value that is not a literal in the source."""


@dataclass(frozen=True)
class RuleFileUse:
    """An ``expect_from_file`` of the source.

    :param path: The rule file as written (relative to the Python file's folder).
    :param line: The line of the call.
    :param column: Its column (1-based).
    """

    path: str
    line: int
    column: int


@dataclass
class PythonRules:
    """What the source of one Python file declares.

    :param rules: Rules read with literal parts (checked; valid or not).
    :param computed: Rules whose parts are computed (left to the pipeline's definition).
    :param errors: Every rule's error, at its call.
    :param rule_files: The rule files it names.
    :param parsed: False when the file could not be read or does not parse (its one
        error, if any, is then :data:`PYTHON_SYNTAX`).
    """

    rules: int = 0
    computed: int = 0
    errors: list[SdpExpectError] = field(default_factory=list)
    rule_files: list[RuleFileUse] = field(default_factory=list)
    parsed: bool = True


def read_python_file(file: Path, shown: str) -> PythonRules:
    """The rules of the Python file ``file`` (named ``shown`` in errors), its source parsed
    once by Python's own parser (``compile`` to a syntax tree: nothing is imported or
    run, so the verdict is the interpreter's): :func:`read_python_rules` of its tree, or
    only SDPX-PRJ-406 at the line and column where the parser stops. A file that cannot
    be read is left to ``spark-pipelines`` to report (no error here)."""
    try:
        text = read_text(file, reject_binary=False, universal_newlines=True)
    except TextFileProblem:
        return PythonRules(parsed=False)
    try:
        tree = ast.parse(text, str(file))
    except SyntaxError as error:
        return PythonRules(parsed=False, errors=[SdpExpectError(
            PYTHON_SYNTAX, f"the file does not parse as Python: {error.msg}",
            location=Location(shown, error.lineno, error.offset))])
    except ValueError as error:  # a NUL byte
        return PythonRules(parsed=False, errors=[SdpExpectError(
            PYTHON_SYNTAX, f"the file does not parse as Python: {error}",
            location=Location(shown))])
    return read_python_rules(tree, shown)


def read_python_rules(tree: ast.Module, shown: str) -> PythonRules:
    """The rules a parsed Python file declares, each checked as the model checks it.

    :param tree: The file's syntax tree (``ast.parse``).
    :param shown: The file's name in the errors.
    """
    modules, functions = _bindings(tree)
    found = PythonRules()

    def callee(call: ast.Call) -> Optional[str]:
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id in modules:
            return func.attr
        if isinstance(func, ast.Name):
            return functions.get(func.id)
        return None

    for node, dataset in _calls(tree, callee):
        word = callee(node)
        place = Location(shown, node.lineno, node.col_offset + 1)
        if word in _SINGLE:
            name = _literal(_argument(node, 0, "name"))
            constraint = _literal(_argument(node, 1, "constraint"))
            _check(found, [(name, constraint)], _SINGLE[word], node, dataset, place)
        elif word in _GROUP:
            groups = [_literal(argument) for argument in node.args]
            _check_groups(found, groups, _GROUP[word], node, dataset, place)
        elif word == _FROM_FILE:
            path = _literal(_argument(node, 0, "path"))
            if isinstance(path, str):
                found.rule_files.append(RuleFileUse(path, node.lineno, node.col_offset + 1))
        if word in _DATASET_CALLS:
            for keyword in node.keywords:
                if keyword.arg in _GROUP:
                    _check_groups(found, [_literal(keyword.value)], _GROUP[keyword.arg],
                                  node, dataset, place)
    return found


def _bindings(tree: ast.Module) -> tuple[set[str], dict[str, str]]:
    """The names bound to sdp-expect's rule modules, and to their functions (name in the
    file to the function's own name)."""
    modules: set[str] = set()
    functions: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.asname for alias in node.names
                           if alias.name in _MODULES and alias.asname)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in _MODULES:
                    modules.add(alias.asname or alias.name)
                elif node.module in _MODULES:
                    functions[alias.asname or alias.name] = alias.name
    return modules, functions


def _calls(tree: ast.Module, callee: Any) -> Iterator[tuple[ast.Call, Optional[str]]]:
    """Every call of the file, with the dataset it declares rules for where known: a
    decorated function's dataset (its dataset decorator's ``name=``, else its name), a
    dataset call's first argument or ``name=``."""
    decorating: dict[int, Optional[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            named = node.name
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and callee(decorator) in _DATASET_CALLS:
                    given = _literal(_keyword(decorator, "name"))
                    named = given if isinstance(given, str) else named
            for decorator in node.decorator_list:
                decorating[id(decorator)] = named
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            dataset = decorating.get(id(node))
            if dataset is None and callee(node) in _DATASET_CALLS:
                given = _literal(_argument(node, 0, "name"))
                dataset = given if isinstance(given, str) else None
            yield node, dataset


def _check_groups(found: PythonRules, groups: list[Any], action: Action, node: ast.Call,
                  dataset: Optional[str], place: Location) -> None:
    for group in groups:
        if isinstance(group, dict):
            _check(found, list(group.items()), action, node, dataset, place)
        else:
            found.computed += 1


def _check(found: PythonRules, rules: list[tuple[Any, Any]], action: Action,
           node: ast.Call, dataset: Optional[str], place: Location) -> None:
    tolerance = _keyword(node, "max_failed")
    max_failed = None if tolerance is None else _literal(tolerance)
    for name, constraint in rules:
        if _UNKNOWN in (name, constraint, max_failed):
            found.computed += 1
            continue
        found.rules += 1
        try:
            make_expectation(name, constraint, action, dataset=dataset, place=place,
                             max_failed=max_failed)
        except SdpExpectError as error:
            found.errors.append(error)


def _argument(call: ast.Call, index: int, keyword: str) -> Optional[ast.expr]:
    if len(call.args) > index and not any(isinstance(a, ast.Starred) for a in call.args):
        return call.args[index]
    return _keyword(call, keyword)


def _keyword(call: ast.Call, name: str) -> Optional[ast.expr]:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _literal(node: Optional[ast.expr]) -> Any:
    """The value a node writes literally (strings, numbers, dicts of them), else
    :data:`_UNKNOWN`."""
    if node is None:
        return _UNKNOWN
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNKNOWN
