"""Plain-Python oracles of the corpus pipelines (tests/corpus/*): no Spark.

Each oracle reads the files that have landed so far (``landing/<source>/*``)
with the parsing rules of Spark's JSON and CSV readers for well-formed input
(a missing JSON field, a JSON ``null`` and an empty CSV field are NULL),
recomputes every table of the pipeline with SQL semantics (three-valued
logic, NULL keys never join, aggregates skip NULLs, ``count(*)`` counts rows)
and applies what expectations mean (docs/semantics.md): a record passes a
rule only when the constraint is TRUE; a record violating a drop rule leaves
the target for the quarantine with the warn and drop rules it violated, in
declaration order; ``<dataset>_dq_metrics`` has one row per rule with the
counts over the query's output (for a streaming table: every record since the
last full refresh, which here is every landed record); ``<dataset>_dq_batches``
one row per micro-batch, which the oracle cannot know: it gives the log's sums
(records, dropped, violations per warn and drop rule), as :func:`batch_log_sums`
folds a log read from Spark.

Every update of a corpus pipeline sees all files landed so far, so the state
after an update is a function of the landing folder alone: materialized views
are recomputed, and streaming tables that read files or other streaming tables
(no stream-static joins in the corpus) hold every landed record.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

Row = dict[str, Any]
Truth = Optional[bool]
FAILED = "_failed_expectations"
METRICS_COLUMNS = ("dataset", "expectation", "action", "constraint", "passed_records",
                   "failed_records", "total_records", "dropped_records")
BATCH_SUMS_COLUMNS = ("_records", "_dropped", "_failed")


def batch_log_sums(rows: Iterable[Row]) -> Table:
    """A batch log's rows (``_batch_time``, ``_records``, ``_dropped``, ``_failed``: rule
    name -> count) summed into one row; ``_failed`` as sorted (name, count) pairs."""
    records = dropped = 0
    failed: dict[str, int] = defaultdict(int)
    for row in rows:
        records += row["_records"]
        dropped += row["_dropped"]
        for name, count in row["_failed"].items():
            failed[name] += count
    return Table(BATCH_SUMS_COLUMNS, [(records, dropped, tuple(sorted(failed.items())))])


# ---------------------------------------------------------------------------------------
# Reading the landed files
# ---------------------------------------------------------------------------------------
def _timestamp(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


CONVERT: dict[str, Callable[[Any], Any]] = {
    "int": int,
    "str": str,
    "dec1": lambda v: Decimal(str(v)).quantize(Decimal("0.1")),
    "dec2": lambda v: Decimal(str(v)).quantize(Decimal("0.01")),
    "date": lambda v: dt.date.fromisoformat(v),
    "ts": _timestamp,
}


def _files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*")
                  if p.is_file() and not p.name.startswith((".", "_")))


def read_json(folder: Path, schema: Sequence[tuple[str, str]]) -> list[Row]:
    """JSON lines with a schema: absent and null fields are NULL."""
    rows = []
    for path in _files(folder):
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            document = json.loads(line, parse_float=Decimal)
            rows.append({name: None if document.get(name) is None
                         else CONVERT[kind](document[name]) for name, kind in schema})
    return rows


def read_csv(folder: Path, schema: Sequence[tuple[str, str]]) -> list[Row]:
    """CSV with a header line, read by position with a schema: an empty field is NULL."""
    rows = []
    for path in _files(folder):
        with path.open(newline="") as handle:
            reader = csv.reader(handle)
            next(reader)
            for record in reader:
                rows.append({name: None if value == "" else CONVERT[kind](value)
                             for (name, kind), value in zip(schema, record, strict=True)})
    return rows


# ---------------------------------------------------------------------------------------
# SQL semantics
# ---------------------------------------------------------------------------------------
def cmp(a: Any, op: str, b: Any) -> Truth:
    """``a op b`` in SQL: NULL when either side is NULL."""
    if a is None or b is None:
        return None
    results: dict[str, bool] = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b,
                                "=": a == b, "<>": a != b}
    return results[op]


def between(value: Any, low: Any, high: Any) -> Truth:
    low_ok, high_ok = cmp(value, ">=", low), cmp(value, "<=", high)
    if low_ok is False or high_ok is False:
        return False
    return None if low_ok is None or high_ok is None else True


def is_in(value: Any, values: Iterable[Any]) -> Truth:
    return None if value is None else value in set(values)


def not_null(value: Any) -> Truth:
    return value is not None


def add(a: Any, b: Any) -> Any:
    return None if a is None or b is None else a + b


def sub(a: Any, b: Any) -> Any:
    return None if a is None or b is None else a - b


def mul(a: Any, b: Any) -> Any:
    return None if a is None or b is None else a * b


def coalesce(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def sql_sum(values: Iterable[Any]) -> Any:
    present = [v for v in values if v is not None]
    return sum(present[1:], present[0]) if present else None


def sql_min(values: Iterable[Any]) -> Any:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def sql_max(values: Iterable[Any]) -> Any:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def count_not_null(values: Iterable[Any]) -> int:
    return sum(v is not None for v in values)


def _key(row: Row, keys: Sequence[str]) -> Optional[tuple[Any, ...]]:
    values = tuple(row[k] for k in keys)
    return None if any(v is None for v in values) else values


def join(left: list[Row], right: list[Row], keys: Sequence[str], how: str) -> list[Row]:
    """``left.join(right, keys, how)`` with USING semantics (keys once, coalesced for full)."""
    right_columns = [c for c in (right[0] if right else {}) if c not in keys]
    index: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for row in right:
        key = _key(row, keys)
        if key is not None:
            index[key].append(row)
    out, matched = [], set()
    for row in left:
        key = _key(row, keys)
        partners = index.get(key, []) if key is not None else []
        for partner in partners:
            matched.add(id(partner))
            out.append({**row, **{c: partner[c] for c in right_columns}})
        if not partners and how in ("left", "full"):
            out.append({**row, **dict.fromkeys(right_columns)})
    if how == "full":
        left_columns = [c for c in (left[0] if left else {}) if c not in keys]
        for partner in right:
            if id(partner) not in matched:
                out.append({**{k: partner[k] for k in keys}, **dict.fromkeys(left_columns),
                            **{c: partner[c] for c in right_columns}})
    return out


def group_by(rows: list[Row], keys: Sequence[str],
             aggregates: dict[str, Callable[[list[Row]], Any]]) -> list[Row]:
    """``GROUP BY keys``: NULL is a group of its own, as in SQL."""
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for row in rows:
        groups[tuple(row[k] for k in keys)].append(row)
    return [{**dict(zip(keys, key, strict=True)),
             **{name: agg(members) for name, agg in aggregates.items()}}
            for key, members in groups.items()]


# ---------------------------------------------------------------------------------------
# Expectations
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    name: str
    constraint: str  # the text the pipeline declares (shown in the metrics table)
    action: str  # warn, drop or fail
    check: Callable[[Row], Truth]


@dataclass
class Table:
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]


@dataclass
class Expected:
    """Every table of a pipeline's catalog, and the fail rules the data violate."""

    tables: dict[str, Table] = field(default_factory=dict)
    # dataset -> [(violated fail rule names joined by ", ", record)]
    violations: dict[str, list[tuple[str, Row]]] = field(default_factory=dict)

    def table(self, name: str, columns: Sequence[str], rows: Iterable[Row]) -> list[Row]:
        kept = [{c: row[c] for c in columns} for row in rows]
        self.tables[name] = Table(tuple(columns), [tuple(r.values()) for r in kept])
        return kept

    def expect(self, name: str, columns: Sequence[str], produced: list[Row],
               rules: Sequence[Rule], *, quarantine: bool, streaming: bool) -> list[Row]:
        """The target, quarantine, metrics (and batch log) of a dataset with rules.

        :returns: The records the target keeps.
        """
        kept: list[tuple[Row, list[str]]] = []
        dropped: list[tuple[Row, list[str]]] = []
        failed = dict.fromkeys((r.name for r in rules), 0)
        for row in produced:
            violated = [r for r in rules if r.check(row) is not True]
            for rule in violated:
                failed[rule.name] += 1
            names = [r.name for r in violated if r.action != "fail"]
            fails = [r.name for r in violated if r.action == "fail"]
            if fails:
                self.violations.setdefault(name, []).append((", ".join(fails), row))
            is_dropped = any(r.action == "drop" for r in violated)
            (dropped if is_dropped else kept).append((row, names))
        self.table(name, columns, [row for row, _ in kept])
        if quarantine:
            self.tables[f"{name}_quarantine"] = Table(
                (*columns, FAILED), [(*(row[c] for c in columns), names)
                                     for row, names in dropped])
        if streaming:
            logged = sorted((r.name, failed[r.name]) for r in rules if r.action != "fail")
            self.tables[f"{name}_dq_batches"] = Table(BATCH_SUMS_COLUMNS, [
                (len(produced), len(dropped), tuple(logged) if produced else ())])
        total = len(produced)
        self.tables[f"{name}_dq_metrics"] = Table(METRICS_COLUMNS, [
            (name, r.name, r.action, r.constraint, total - failed[r.name], failed[r.name], total,
             len(dropped)) for r in rules])
        return [row for row, _ in kept]


def warn(name: str, constraint: str, check: Callable[[Row], Truth]) -> Rule:
    return Rule(name, constraint, "warn", check)


def drop(name: str, constraint: str, check: Callable[[Row], Truth]) -> Rule:
    return Rule(name, constraint, "drop", check)


def fail(name: str, constraint: str, check: Callable[[Row], Truth]) -> Rule:
    return Rule(name, constraint, "fail", check)


# ---------------------------------------------------------------------------------------
# The pipelines
# ---------------------------------------------------------------------------------------
def loans(landing: Path) -> Expected:
    out = Expected()
    applications = read_json(landing / "loan_applications", [
        ("loan_id", "int"), ("member_id", "str"), ("amt", "dec2"), ("int_rate_pct", "dec2"),
        ("term_months", "int"), ("grade", "str"), ("branch", "str"), ("status", "str"),
        ("issued", "str")])
    raw = out.table("loans_raw", [
        "loan_id", "member_id", "loan_amount", "int_rate_pct", "term_months", "grade", "branch",
        "status", "issued_date"], [
        {**a, "loan_amount": a["amt"],
         "grade": None if a["grade"] is None else a["grade"].strip(" ").upper(),
         "issued_date": None if a["issued"] is None else dt.date.fromisoformat(a["issued"])}
        for a in applications])
    loans_clean = out.expect("loans_clean", [
        "loan_id", "member_id", "loan_amount", "int_rate_pct", "term_months", "grade", "branch",
        "status", "issued_date"], raw, [
        warn("rate within policy", "int_rate_pct BETWEEN 5 AND 25",
             lambda r: between(r["int_rate_pct"], 5, 25)),
        drop("valid loan id", "loan_id IS NOT NULL", lambda r: not_null(r["loan_id"])),
        drop("positive amount", "loan_amount > 0", lambda r: cmp(r["loan_amount"], ">", 0)),
        fail("known status", "status IN ('current', 'late', 'paid_off', 'charged_off')",
             lambda r: is_in(r["status"], ["current", "late", "paid_off", "charged_off"])),
    ], quarantine=True, streaming=True)

    payments_in = read_csv(landing / "payments", [
        ("payment_id", "str"), ("loan_id", "int"), ("paid_amount", "dec2"), ("paid_on", "date")])
    payments = out.expect("payments", ["payment_id", "loan_id", "paid_amount", "paid_on"],
                          payments_in, [
        warn("paid in 2024", "paid_on >= DATE'2024-01-01'",
             lambda r: cmp(r["paid_on"], ">=", dt.date(2024, 1, 1))),
        drop("payment has loan", "loan_id IS NOT NULL", lambda r: not_null(r["loan_id"])),
        drop("positive payment", "paid_amount > 0", lambda r: cmp(r["paid_amount"], ">", 0)),
    ], quarantine=True, streaming=True)

    paid = group_by(payments, ["loan_id"], {
        "paid": lambda rs: sql_sum(r["paid_amount"] for r in rs), "payments": len})
    balances = [{
        **row,
        "total_paid": coalesce(row["paid"], 0),
        "payment_count": coalesce(row["payments"], 0),
        "outstanding": sub(row["loan_amount"], coalesce(row["paid"], 0)),
    } for row in join(loans_clean, paid, ["loan_id"], "left")]
    out.expect("loan_balances", ["loan_id", "member_id", "loan_amount", "total_paid",
                                 "payment_count", "outstanding"], balances, [
        warn("has payments", "payment_count > 0", lambda r: cmp(r["payment_count"], ">", 0)),
        fail("balance not negative", "outstanding >= 0", lambda r: cmp(r["outstanding"], ">=", 0)),
    ], quarantine=False, streaming=False)

    branches = [{"branch": b["branch_code"], "branch_name": b["branch_name"], "state": b["state"]}
                for b in read_csv(landing / "branches", [
                    ("branch_code", "str"), ("branch_name", "str"), ("state", "str")])]
    by_branch = group_by(join(loans_clean, branches, ["branch"], "left"),
                         ["branch", "branch_name", "state"], {
        "loans": len, "total_amount": lambda rs: sql_sum(r["loan_amount"] for r in rs)})
    out.expect("loans_by_branch", ["branch", "branch_name", "state", "loans", "total_amount"],
               by_branch, [warn("branch is known", "branch_name IS NOT NULL",
                                lambda r: not_null(r["branch_name"]))],
               quarantine=False, streaming=False)
    out.table("late_loans", ["loan_id", "member_id", "branch_name", "state", "loan_amount"],
              join([r for r in loans_clean if r["status"] == "late"], branches, ["branch"],
                   "inner"))
    return out


def bike_rides(landing: Path) -> Expected:
    out = Expected()
    trips = read_csv(landing / "rides", [
        ("ride_id", "str"), ("bike_type", "str"), ("started_at", "ts"), ("ended_at", "ts"),
        ("start_station", "str"), ("end_station", "str"), ("member_type", "str")])
    columns = ["ride_id", "bike_type", "started_at", "ended_at", "start_station", "end_station",
               "member_type", "ride_date", "duration_min"]
    raw = out.table("rides_raw", columns, [{
        **t,
        "ride_date": None if t["started_at"] is None else t["started_at"].date(),
        "duration_min": None if t["started_at"] is None or t["ended_at"] is None
        else int((t["ended_at"] - t["started_at"]).total_seconds() / 60),
    } for t in trips])
    rides = out.expect("rides_clean", columns, raw, [
        warn("known bike type", "bike_type IN ('classic_bike', 'electric_bike')",
             lambda r: is_in(r["bike_type"], ["classic_bike", "electric_bike"])),
        drop("ride has id", "ride_id IS NOT NULL", lambda r: not_null(r["ride_id"])),
        drop("ends after start", "duration_min > 0", lambda r: cmp(r["duration_min"], ">", 0)),
        fail("has start station", "start_station IS NOT NULL",
             lambda r: not_null(r["start_station"])),
    ], quarantine=True, streaming=True)

    stations_in = read_json(landing / "stations", [
        ("station_id", "str"), ("name", "str"), ("capacity", "int")])
    stations = out.expect("stations", ["station_id", "station_name", "capacity"], [
        {"station_id": s["station_id"], "station_name": s["name"],
         "capacity": coalesce(s["capacity"], 0)} for s in stations_in],
        [warn("capacity known", "capacity > 0", lambda r: cmp(r["capacity"], ">", 0))],
        quarantine=False, streaming=False)

    departures = group_by([{**r, "station_id": r["start_station"]} for r in rides],
                          ["station_id", "ride_date"], {"departures": len})
    arrivals = group_by([{**r, "station_id": r["end_station"]} for r in rides
                         if r["end_station"] is not None],
                        ["station_id", "ride_date"], {"arrivals": len})
    flows = join(join(departures, arrivals, ["station_id", "ride_date"], "full"),
                 [{"station_id": s["station_id"], "station_name": s["station_name"]}
                  for s in stations], ["station_id"], "left")
    out.expect("station_daily_flow", ["station_id", "station_name", "ride_date", "departures",
                                      "arrivals", "net"], [{
        **f, "departures": coalesce(f["departures"], 0), "arrivals": coalesce(f["arrivals"], 0),
        "net": coalesce(f["arrivals"], 0) - coalesce(f["departures"], 0)} for f in flows],
        [warn("station known", "station_name IS NOT NULL",
              lambda r: not_null(r["station_name"]))], quarantine=False, streaming=False)
    out.table("member_usage", ["member_type", "rides", "total_minutes", "longest_minutes"],
              group_by(rides, ["member_type"], {
                  "rides": len,
                  "total_minutes": lambda rs: sql_sum(r["duration_min"] for r in rs),
                  "longest_minutes": lambda rs: sql_max(r["duration_min"] for r in rs)}))
    return out


def station_status(landing: Path) -> Expected:
    out = Expected()
    columns = ["station_id", "num_bikes_available", "num_docks_available", "status",
               "reported_at", "feed"]
    main = out.table("status_main", columns, [
        {**r, "reported_at": r["last_reported"], "feed": "main"}
        for r in read_json(landing / "status_main", [
            ("station_id", "str"), ("num_bikes_available", "int"),
            ("num_docks_available", "int"), ("status", "str"), ("last_reported", "ts")])])
    partner = out.table("status_partner", columns, [
        {"station_id": r["stationId"], "num_bikes_available": r["bikes"],
         "num_docks_available": r["docks"], "status": r["state"], "reported_at": r["ts"],
         "feed": "partner"}
        for r in read_json(landing / "status_partner", [
            ("stationId", "str"), ("bikes", "int"), ("docks", "int"), ("state", "str"),
            ("ts", "ts")])])
    status = out.expect("status_clean", columns, main + partner, [
        warn("bikes not negative", "num_bikes_available >= 0",
             lambda r: cmp(r["num_bikes_available"], ">=", 0)),
        warn("docks not negative", "num_docks_available >= 0",
             lambda r: cmp(r["num_docks_available"], ">=", 0)),
        drop("station id present", "station_id IS NOT NULL",
             lambda r: not_null(r["station_id"])),
        drop("reported time present", "reported_at IS NOT NULL",
             lambda r: not_null(r["reported_at"])),
        fail("status is known", "status IN ('active', 'maintenance')",
             lambda r: is_in(r["status"], ["active", "maintenance"])),
    ], quarantine=True, streaming=True)
    info = out.table("station_info", ["station_id", "name", "total_docks"], [
        {**r, "total_docks": r["capacity"]} for r in read_json(landing / "station_info", [
            ("station_id", "str"), ("name", "str"), ("capacity", "int")])])
    latest = group_by(status, ["station_id"], {
        "reported_at": lambda rs: sql_max(r["reported_at"] for r in rs)})
    current = join(join(status, latest, ["station_id", "reported_at"], "inner"), info,
                   ["station_id"], "left")
    out.expect("station_latest", ["station_id", "name", "num_bikes_available",
                                  "num_docks_available", "total_docks", "status", "reported_at",
                                  "feed"], current, [
        warn("has bikes", "num_bikes_available > 0",
             lambda r: cmp(r["num_bikes_available"], ">", 0)),
        drop("fits capacity", "num_bikes_available + num_docks_available <= total_docks",
             lambda r: cmp(add(r["num_bikes_available"], r["num_docks_available"]), "<=",
                           r["total_docks"])),
    ], quarantine=True, streaming=False)
    out.table("bikes_by_feed", ["feed", "reports", "bikes"], group_by(
        [r for r in status if r["status"] == "active"], ["feed"], {
            "reports": len, "bikes": lambda rs: sql_sum(r["num_bikes_available"] for r in rs)}))
    return out


def retail_orders(landing: Path) -> Expected:
    out = Expected()
    orders_in = [{**o, "customer_id": o["cust_id"]} for o in read_json(landing / "orders", [
        ("order_id", "int"), ("cust_id", "int"), ("channel", "str"), ("order_ts", "str")])]
    landing_orders = out.table("orders_landing", [
        "order_id", "customer_id", "channel", "order_ts", "order_date"], [
        {**o, "order_date": None if o["order_ts"] is None
         else dt.date.fromisoformat(o["order_ts"][:10])} for o in orders_in])
    orders = out.expect("orders_silver", ["order_id", "customer_id", "channel", "order_date"],
                        landing_orders, [
        drop("valid order id", "order_id IS NOT NULL", lambda r: not_null(r["order_id"])),
        warn("known channel", "channel IN ('web', 'store', 'app')",
             lambda r: is_in(r["channel"], ["web", "store", "app"])),
        fail("order has customer", "customer_id IS NOT NULL",
             lambda r: not_null(r["customer_id"])),
    ], quarantine=True, streaming=True)
    items_in = out.table("order_items_landing", ["order_id", "sku", "quantity", "unit_price"],
                         read_csv(landing / "order_items", [
                             ("order_id", "int"), ("sku", "str"), ("quantity", "int"),
                             ("unit_price", "dec2")]))
    items = out.expect("order_items_silver", ["order_id", "sku", "quantity", "unit_price",
                                              "line_total"], [
        {**i, "line_total": mul(i["quantity"], i["unit_price"])} for i in items_in], [
        drop("positive quantity", "quantity > 0", lambda r: cmp(r["quantity"], ">", 0)),
        drop("price present", "unit_price IS NOT NULL", lambda r: not_null(r["unit_price"])),
    ], quarantine=True, streaming=True)
    customers = out.expect("customers", ["customer_id", "name", "email", "country"],
                           read_json(landing / "customers", [
                               ("customer_id", "int"), ("name", "str"), ("email", "str"),
                               ("country", "str")]),
                           [warn("email present", "email IS NOT NULL",
                                 lambda r: not_null(r["email"]))],
                           quarantine=False, streaming=False)
    totals = group_by(join(orders, [{k: i[k] for k in ("order_id", "sku", "line_total")}
                                    for i in items], ["order_id"], "left"),
                      ["order_id", "customer_id", "channel"], {
        "items": lambda rs: count_not_null(r["sku"] for r in rs),
        "order_total": lambda rs: coalesce(sql_sum(r["line_total"] for r in rs), 0)})
    totals = out.expect("order_totals", ["order_id", "customer_id", "channel", "items",
                                         "order_total"], totals, [
        fail("total not negative", "order_total >= 0", lambda r: cmp(r["order_total"], ">=", 0)),
    ], quarantine=False, streaming=False)
    out.table("sales_by_country", ["country", "orders", "revenue"], group_by(
        join(totals, customers, ["customer_id"], "inner"), ["country"], {
            "orders": len, "revenue": lambda rs: sql_sum(r["order_total"] for r in rs)}))
    per_customer = group_by(orders, ["customer_id"], {"orders": len})
    out.table("customer_orders", ["customer_id", "name", "orders"], [
        {**r, "orders": coalesce(r["orders"], 0)}
        for r in join([{"customer_id": c["customer_id"], "name": c["name"]} for c in customers],
                      per_customer, ["customer_id"], "full")])
    out.expect("order_lines_export", ["order_id", "sku", "qty", "line_total_cents"], [
        {"order_id": i["order_id"], "sku": i["sku"], "qty": i["quantity"],
         "line_total_cents": None if i["line_total"] is None else int(i["line_total"] * 100)}
        for i in items], [
        drop("order known", "order_id IS NOT NULL", lambda r: not_null(r["order_id"])),
        warn("regular quantity", "qty < 10", lambda r: cmp(r["qty"], "<", 10)),
    ], quarantine=False, streaming=True)
    return out


def iot_devices(landing: Path) -> Expected:
    out = Expected()
    columns = ["device_id", "temperature_c", "battery_pct", "reading_ts", "reading_date"]
    raw = out.table("device_readings_landing", columns, [
        {**r, "reading_ts": None if r["ts"] is None else _timestamp(r["ts"]),
         "reading_date": None if r["ts"] is None else dt.date.fromisoformat(r["ts"][:10])}
        for r in read_json(landing / "readings", [
            ("device_id", "str"), ("ts", "str"), ("temperature_c", "dec1"),
            ("battery_pct", "int")])])
    readings = out.expect("readings_clean", columns, raw, [
        drop("device id present", "device_id IS NOT NULL", lambda r: not_null(r["device_id"])),
        drop("temperature in range", "temperature_c BETWEEN -40 AND 85",
             lambda r: between(r["temperature_c"], -40, 85)),
        warn("battery reported", "battery_pct IS NOT NULL", lambda r: not_null(r["battery_pct"])),
    ], quarantine=True, streaming=True)
    devices = read_json(landing / "devices", [
        ("device_id", "str"), ("site", "str"), ("model", "str")])
    daily = group_by(join(readings, devices, ["device_id"], "left"),
                     ["device_id", "site", "reading_date"], {
        "readings": len,
        "min_temperature_c": lambda rs: sql_min(r["temperature_c"] for r in rs),
        "max_temperature_c": lambda rs: sql_max(r["temperature_c"] for r in rs),
        "min_battery": lambda rs: sql_min(r["battery_pct"] for r in rs)})
    out.expect("device_daily", ["device_id", "site", "reading_date", "readings",
                                "min_temperature_c", "max_temperature_c", "min_battery"], daily, [
        warn("known site", "site IS NOT NULL", lambda r: not_null(r["site"])),
        drop("battery healthy", "min_battery >= 20", lambda r: cmp(r["min_battery"], ">=", 20)),
    ], quarantine=True, streaming=False)
    hot = [r for r in readings if cmp(r["temperature_c"], ">", 50)]
    out.table("hot_readings", ["device_id", "reading_ts", "temperature_c"], hot)
    out.table("site_alerts", ["site", "hot_readings", "max_temperature_c"], group_by(
        join(hot, devices, ["device_id"], "inner"), ["site"], {
            "hot_readings": len,
            "max_temperature_c": lambda rs: sql_max(r["temperature_c"] for r in rs)}))
    levels = {(r["device_id"], -1 if r["battery_pct"] is None else r["battery_pct"],
               r["reading_date"]) for r in readings}  # fillna, drop, dropDuplicates
    out.expect("device_battery", ["device_id", "battery_level", "reading_date", "low_battery"], [
        {"device_id": d, "battery_level": b, "reading_date": day, "low_battery": b < 20}
        for d, b, day in levels], [
        drop("battery level reported", "battery_level >= 0",
             lambda r: cmp(r["battery_level"], ">=", 0)),
        warn("battery not low", "NOT low_battery", lambda r: not r["low_battery"]),
    ], quarantine=False, streaming=False)
    return out


def loan_risk(landing: Path) -> Expected:
    out = Expected()
    columns = ["application_id", "applicant_id", "region", "requested_amount", "annual_income",
               "purpose", "submitted_on"]
    east = out.table("applications_east", [
        "application_id", "applicant_id", "requested_amount", "annual_income", "purpose",
        "submitted_on", "region"], [{**r, "region": "east"} for r in read_csv(
            landing / "applications_east", [
                ("application_id", "str"), ("applicant_id", "str"), ("requested_amount", "int"),
                ("annual_income", "int"), ("purpose", "str"), ("submitted_on", "date")])])
    west = out.table("applications_west", [
        "applicant_id", "application_id", "annual_income", "requested_amount", "purpose",
        "submitted_on", "region"], [{**r, "region": "west"} for r in read_csv(
            landing / "applications_west", [
                ("applicant_id", "str"), ("application_id", "str"), ("annual_income", "int"),
                ("requested_amount", "int"), ("purpose", "str"), ("submitted_on", "date")])])
    applications = out.expect("applications", columns, east + west, [
        drop("application id present", "application_id IS NOT NULL",
             lambda r: not_null(r["application_id"])),
        drop("amount within limits", "requested_amount BETWEEN 1000 AND 50000",
             lambda r: between(r["requested_amount"], 1000, 50000)),
        warn("income reported", "annual_income > 0", lambda r: cmp(r["annual_income"], ">", 0)),
        warn("known purpose", "purpose IN ('car', 'home', 'education', 'debt')",
             lambda r: is_in(r["purpose"], ["car", "home", "education", "debt"])),
    ], quarantine=True, streaming=False)
    bureau = [{**b, "delinquencies": coalesce(b["delinquencies"], 0)}
              for b in read_json(landing / "bureau", [
                  ("applicant_id", "str"), ("credit_score", "int"), ("delinquencies", "int")])]
    bureau = [b for b in bureau if b["credit_score"] is not None]

    def band(row: Row) -> str:
        low = cmp(row["credit_score"], ">=", 720) is True and row["delinquencies"] == 0
        if low:
            return "low"
        return "medium" if cmp(row["credit_score"], ">=", 640) is True else "high"

    def dti(row: Row) -> Optional[int]:
        amount: Optional[int] = row["requested_amount"]
        income: Optional[int] = row["annual_income"]
        if amount is None or income is None or income == 0:
            return None
        quotient = abs(amount * 100) // abs(income)  # div truncates toward zero
        return quotient if (amount * 100) * income >= 0 else -quotient

    scored = [{**r, "debt_to_income_pct": dti(r), "risk_band": band(r)}
              for r in join(applications, bureau, ["applicant_id"], "left")]
    scores = out.expect("risk_scores", [
        "application_id", "applicant_id", "region", "requested_amount", "annual_income",
        "credit_score", "delinquencies", "debt_to_income_pct", "risk_band"], scored, [
        drop("affordable", "debt_to_income_pct < 60",
             lambda r: cmp(r["debt_to_income_pct"], "<", 60)),
        warn("has credit score", "credit_score IS NOT NULL",
             lambda r: not_null(r["credit_score"])),
        fail("risk band assigned", "risk_band IS NOT NULL", lambda r: not_null(r["risk_band"])),
    ], quarantine=True, streaming=False)
    out.table("risk_band_summary", ["region", "risk_band", "applications", "requested_total"],
              group_by(scores, ["region", "risk_band"], {
                  "applications": len,
                  "requested_total": lambda rs: sql_sum(r["requested_amount"] for r in rs)}))
    return out


ORACLES: dict[str, Callable[[Path], Expected]] = {
    "loans": loans,
    "bike_rides": bike_rides,
    "station_status": station_status,
    "retail_orders": retail_orders,
    "iot_devices": iot_devices,
    "loan_risk": loan_risk,
}
