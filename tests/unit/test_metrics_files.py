"""The metrics' shape and the files built on them: the Grafana dashboard and the alert rules
name only metrics bpm exports, and parse; the engine library never imports Prometheus's
client (an observer is handed to it), and the metrics package never imports Celery or the
HTTP framework."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import yaml

from bpm_metrics.families import FAMILIES, Kind, series_names
from bpm_workers.metrics import outcome_label

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "bpm-dashboard.json"
RULES = ROOT / "deploy" / "prometheus" / "bpm-alerts.yml"
SCRAPE = ROOT / "deploy" / "prometheus" / "prometheus.yml"
OPERATIONS = ROOT / "docs" / "operations.md"
#: A metric name in a PromQL expression (bpm's own; ``up`` is Prometheus's).
_METRIC = re.compile(r"\bbpm_[a-z_]+\b")
MAX_MODULE_LINES = 400


def _named(expr: str) -> set[str]:
    return set(_METRIC.findall(expr))


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_the_dashboard_is_grafana_json_naming_only_exported_metrics() -> None:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text())
    assert dashboard["title"] and dashboard["uid"] and dashboard["panels"]
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert exprs
    named = set().union(*(_named(e) for e in exprs))
    assert named - series_names() == set()
    shown = {n.removesuffix("_total").removesuffix("_bucket").removesuffix("_count") for n in named}
    assert {f.name for f in FAMILIES} - shown == set(), "a family no panel shows"


def test_the_alert_rules_parse_and_name_only_exported_metrics() -> None:
    for text in (RULES.read_text(), _doc_block("groups:")):
        rules = [r for g in yaml.safe_load(text)["groups"] for r in g["rules"]]
        assert {r["alert"] for r in rules} >= {
            "BpmWorkPilingUp",
            "BpmTimersLate",
            "BpmIncidentsRising",
            "BpmWorkerDown",
            "BpmWorkersAbsent",
        }
        for rule in rules:
            assert _named(rule["expr"]) <= series_names(), rule["expr"]
            assert _named(rule["expr"]) or 'job="bpm-workers"' in rule["expr"]


def test_the_scrape_config_sends_a_credential() -> None:
    config = yaml.safe_load(SCRAPE.read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {"bpm-server", "bpm-workers"}
    assert all("basic_auth" in job for job in jobs.values())
    assert yaml.safe_load(_doc_block("scrape_configs:"))["scrape_configs"]


def _doc_block(starting: str) -> str:
    """The YAML block of docs/operations.md that starts with ``starting``."""
    blocks = re.findall(r"```yaml\n(.*?)```", OPERATIONS.read_text(), re.S)
    [found] = [b for b in blocks if b.lstrip().startswith(starting)]
    return str(found)


def test_every_family_is_named_in_the_docs_table() -> None:
    text = OPERATIONS.read_text()
    for family in FAMILIES:
        shown = f"{family.name}_total" if family.kind is Kind.COUNTER else family.name
        assert f"`{shown}`" in text, family.name


def test_the_engine_never_imports_prometheus_and_the_metrics_package_no_framework() -> None:
    for path in (ROOT / "bpm").rglob("*.py"):
        assert not _imports(path) & {"prometheus_client", "bpm_metrics"}, path
    for path in (ROOT / "bpm_metrics").rglob("*.py"):
        assert not _imports(path) & {"celery", "fastapi", "starlette", "bpm_server"}, path
        lines = len(path.read_text().splitlines())
        assert lines <= MAX_MODULE_LINES, f"{path.name} has {lines} lines"


def test_a_job_outcome_label_is_a_word_never_an_id_or_counts() -> None:
    assert outcome_label("done") == "done"
    assert outcome_label("started 1b4e28ba-2fa1-11d2-883f-0016d3cca427") == "started"
    assert outcome_label("stalled_tokens=0 ready_tasks=2") == "scanned"
    assert outcome_label("1b4e28ba-2fa1-11d2-883f-0016d3cca427") == "other"
