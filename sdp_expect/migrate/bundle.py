"""The pipeline settings of the source project, from a Databricks Asset Bundle (its
first pipeline) or else a pipeline settings JSON file (what the Lakeflow pipeline's
"JSON" view and ``databricks pipelines get`` give): the name and configuration carried
over, every other setting reported (with its line in a bundle).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sdp_expect.base.project import setting_text
from sdp_expect.migrate.result import NOT_CONVERTED, NOTE, SKIPPED_FOLDERS, Finding, MigrationResult

__all__ = ["read_bundle"]


_BUNDLE_KEPT = {"name", "configuration", "libraries"}
_JSON_MARKS = {"libraries", "clusters", "pipeline_type", "continuous", "development",
               "channel", "edition", "serverless", "photon"}
"""Keys of which a pipeline settings JSON file has at least one beside ``configuration``
(a rule file, also JSON, has none of them)."""
_JSON_IGNORED = {"id", "pipeline_id", "spec", "creator_user_name", "last_modified",
                 "run_as_user_name", "state", "cluster_id"}
"""Keys of ``databricks pipelines get`` that describe the pipeline, not set it."""
_BUNDLE_HINTS = {
    "catalog": "Unity Catalog: the tables go to the local catalog's default database; set "
               "`catalog:`/`database:` in spark-pipeline.yml for others (create them first)",
    "schema": "the tables go to the default database; set `database:` in spark-pipeline.yml "
              "for another (create it first)",
    "target": "the tables go to the default database; set `database:` in spark-pipeline.yml "
              "for another (create it first)",
}


def _node_get(node: Any, key: str) -> tuple[Any, Any]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if getattr(key_node, "value", None) == key:
                return key_node, value_node
    return None, None


def read_bundle(src: Path, result: MigrationResult) -> dict[str, Any]:
    """The pipeline settings of ``src``: ``file``, ``name`` and ``configuration`` of the
    first pipeline of a Databricks Asset Bundle, else of a pipeline settings JSON file;
    empty when there is neither."""
    return _read_yaml_bundle(src, result) or _read_settings_json(src, result)


def _read_settings_json(src: Path, result: MigrationResult) -> dict[str, Any]:
    import json

    for path in sorted(src.rglob("*.json")):
        if any(part in SKIPPED_FOLDERS for part in path.relative_to(src).parts):
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("spec"), dict):
            data = data["spec"]  # `databricks pipelines get` wraps the settings
        if not (isinstance(data, dict) and isinstance(data.get("configuration"), dict)
                and _JSON_MARKS & set(data)):
            continue
        rel = path.relative_to(src).as_posix()
        found: dict[str, Any] = {"file": rel, "configuration": {
            str(k): setting_text(v) for k, v in data["configuration"].items()}}
        if "name" in data:
            found["name"] = str(data["name"])
        for setting in data:
            if setting in _BUNDLE_KEPT or setting in _JSON_IGNORED:
                continue
            hint = _BUNDLE_HINTS.get(str(setting), "a Databricks pipeline setting with no "
                                     "open-source SDP equivalent")
            result.findings.append(Finding(NOT_CONVERTED, rel, None,
                                           f"pipeline setting `{setting}` not carried over: "
                                           f"{hint}"))
        return found
    return {}


def _read_yaml_bundle(src: Path, result: MigrationResult) -> dict[str, Any]:
    import yaml

    candidates = sorted(p for p in src.rglob("*.y*ml")
                        if p.suffix in (".yml", ".yaml")
                        and not any(part in SKIPPED_FOLDERS for part in p.relative_to(src).parts))
    for path in candidates:
        try:
            text = path.read_text(encoding="utf-8")
            root = yaml.compose(text)
            data = yaml.safe_load(text)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        pipelines = (data or {}).get("resources", {}).get("pipelines") \
            if isinstance(data, dict) and isinstance(data.get("resources"), dict) else None
        if not isinstance(pipelines, dict) or not pipelines:
            continue
        rel = path.relative_to(src).as_posix()
        _, resources = _node_get(root, "resources")
        _, pipelines_node = _node_get(resources, "pipelines")
        key, settings = next(iter(pipelines.items()))
        _, settings_node = _node_get(pipelines_node, key)
        if len(pipelines) > 1:
            result.findings.append(Finding(NOTE, rel, None, f"the bundle defines "
                                           f"{len(pipelines)} pipelines; migrate used '{key}'"))
        found: dict[str, Any] = {"file": rel}
        if not isinstance(settings, dict):
            return found
        found["name"] = str(settings.get("name", key))
        configuration = settings.get("configuration") or {}
        if isinstance(configuration, dict):
            kept = {}
            _, conf_node = _node_get(settings_node, "configuration")
            for conf_key, value in configuration.items():
                key_node, _ = _node_get(conf_node, str(conf_key))
                line = key_node.start_mark.line + 1 if key_node is not None else None
                text_value = setting_text(value)
                if "${" in text_value:
                    result.findings.append(Finding(NOT_CONVERTED, rel, line, f"configuration "
                                                   f"{conf_key}: {text_value} uses a bundle "
                                                   "variable: set the value in "
                                                   "spark-pipeline.yml"))
                kept[str(conf_key)] = text_value
            found["configuration"] = kept
        for setting in settings:
            if setting in _BUNDLE_KEPT:
                continue
            key_node, _ = _node_get(settings_node, str(setting))
            line = key_node.start_mark.line + 1 if key_node is not None else None
            hint = _BUNDLE_HINTS.get(str(setting), "a Databricks pipeline setting with no "
                                     "open-source SDP equivalent")
            result.findings.append(Finding(NOT_CONVERTED, rel, line,
                                           f"pipeline setting `{setting}` not carried over: "
                                           f"{hint}"))
        if "libraries" in settings:
            key_node, _ = _node_get(settings_node, "libraries")
            result.findings.append(Finding(NOTE, rel, key_node.start_mark.line + 1
                                           if key_node is not None else None,
                                           "libraries: spark-pipeline.yml lists the pipeline "
                                           "files found in the project instead"))
        return found
    return {}
