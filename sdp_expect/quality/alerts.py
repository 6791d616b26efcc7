"""Alerts on a rule's failure rate, declared in the pipeline settings (docs/alerts.md).

The settings are keys of the spec's ``configuration`` (so that neither the rules nor
the decorators change)::

    configuration:
      sdp_expect.alert.max_rate: "5%"           # any rule above 5 % in an update
      sdp_expect.alert.max_rise: "2%"           # any rule more than 2 points above its
                                                # recent rate (report.trends)
      sdp_expect.alert.min_records: "100"       # no alert on an update of fewer records
      sdp_expect.alert.orders.max_rate: "1%"    # dataset orders: its own bound
      sdp_expect.alert.orders.valid_id.max_rise: "off"   # one rule: none
      sdp_expect.alert.webhook: https://hooks.example.com/dq

:func:`read_alert_settings` reads and checks them (``SDPX-CFG-202`` names the key,
the value and the fix); :func:`evaluate_alerts` turns them and the rules' trends
(:func:`sdp_expect.quality.trends.rule_trends`) into the alerts of one update. Pure
Python, exact: rates and bounds are :class:`~fractions.Fraction`\\ s, never floats, and
a rate exactly at its bound does not alert.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable, Mapping, Optional
from urllib.parse import urlsplit

from sdp_expect.base.errors import SdpExpectError
from sdp_expect.core.model import parse_tolerance
from sdp_expect.quality.trends import RECENT_UPDATES, RuleTrend

__all__ = [
    "unmatched_alert_keys",
    "ALERT_PREFIX",
    "KEY_WEBHOOK",
    "MAX_RATE",
    "MAX_RISE",
    "MIN_RECORDS",
    "MESSAGE_SCHEMA",
    "Alert",
    "AlertSettings",
    "Bound",
    "evaluate_alerts",
    "percent_text",
    "points_text",
    "read_alert_settings",
    "rounded_percent",
    "webhook_url_problem",
]

ALERT_PREFIX = "sdp_expect.alert."
"""The prefix of every alert setting."""
MAX_RATE = "max_rate"
"""An update's failure rate above this percentage alerts."""
MAX_RISE = "max_rise"
"""An update's failure rate above the recent rate by more than these percentage points alerts."""
MIN_RECORDS = "min_records"
"""An update that checked fewer records than this never alerts (default 1)."""
WEBHOOK = "webhook"
KEY_WEBHOOK = ALERT_PREFIX + WEBHOOK
"""The webhook URL setting (pipeline-wide only)."""
MESSAGE_SCHEMA = "sdp-expect/alert/v1"
"""The ``schema`` field of an alert's JSON (the summary's and the webhook's)."""

_BOUNDS = (MAX_RATE, MAX_RISE)
_PER_RULE = (MAX_RATE, MAX_RISE, MIN_RECORDS)
_OFF = "off"
_MAX_MIN_RECORDS = 2**63 - 1


def _refuse(key: str, value: str, detail: str, fix: str) -> SdpExpectError:
    return SdpExpectError("SDPX-CFG-202", f"{key} = {value!r} {detail}", fix=fix)


@dataclass(frozen=True)
class Bound:
    """A bound on a rate (``max_rate``) or on its rise (``max_rise``).

    :param text: As written (``"5%"``).
    :param value: The fraction (``5%`` is ``Fraction(1, 20)``).
    :param key: The setting that gave it.
    """

    text: str
    value: Fraction
    key: str


@dataclass(frozen=True)
class AlertSettings:
    """The alert settings of a pipeline, checked.

    :param values: Each ``sdp_expect.alert.*`` key but the webhook's, with its value read:
        a :class:`Bound` (``max_rate``, ``max_rise``), ``None`` (``off``) or an ``int``
        (``min_records``).
    :param webhook: The webhook URL (``sdp_expect.alert.webhook``), if any.
    """

    values: Mapping[str, Any] = field(default_factory=dict)
    webhook: Optional[str] = None

    @property
    def declared(self) -> bool:
        """Whether any bound is set (``off`` aside)."""
        return any(isinstance(value, Bound) for value in self.values.values())

    def _lookup(self, dataset: str, expectation: str, name: str) -> tuple[bool, Any]:
        for key in (f"{ALERT_PREFIX}{dataset}.{expectation}.{name}",
                    f"{ALERT_PREFIX}{dataset}.{name}", f"{ALERT_PREFIX}{name}"):
            if key in self.values:
                return True, self.values[key]
        return False, None

    def bound(self, dataset: str, expectation: str, name: str) -> Optional[Bound]:
        """The bound ``name`` (``max_rate`` or ``max_rise``) of a rule: the rule's key,
        else its dataset's, else the pipeline's; ``None`` when none is set or the first
        one set is ``off``."""
        _, value = self._lookup(dataset, expectation, name)
        return value if isinstance(value, Bound) else None

    def min_records(self, dataset: str, expectation: str) -> int:
        """The fewest records an update of the rule must check to alert (same precedence)."""
        found, value = self._lookup(dataset, expectation, MIN_RECORDS)
        return max(1, int(value)) if found else 1


def unmatched_alert_keys(settings: AlertSettings,
                         rules: Iterable[tuple[str, str]]) -> list[str]:
    """The per-dataset and per-rule alert keys that name no dataset or rule of ``rules``
    (``(dataset, expectation)`` pairs: the pipeline's rules), sorted: a misspelt name
    would otherwise never match, and no alert would ever fire (SDPX-CFG-203).

    A key's middle part (between ``sdp_expect.alert.`` and the setting) matches when it
    is a dataset's name, or a dataset's and one of its rules' names joined by a dot.
    """
    pairs = set(rules)
    known = {dataset for dataset, _ in pairs} | {f"{d}.{e}" for d, e in pairs}
    unmatched = []
    for key in settings.values:
        middle, _, _ = key[len(ALERT_PREFIX):].rpartition(".")
        if middle and middle not in known:
            unmatched.append(key)
    return sorted(unmatched)


def webhook_url_problem(url: str) -> Optional[str]:
    """What is wrong with a webhook URL (``None``: nothing): it must be ``http://`` or
    ``https://`` with a host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "is not an http:// or https:// URL with a host"
    return None


def _read_bound(key: str, raw: str) -> Optional[Bound]:
    value = raw.strip()
    if value.lower() == _OFF:
        return None
    fix = ("write a percentage from 0% to 100% in quotes, e.g. \"5%\" or \"0.5%\" (at most 6 "
           "digits after the point), or \"off\" to turn off a bound set for the whole pipeline "
           "or dataset; docs/alerts.md")
    try:
        tolerance = parse_tolerance(value)
    except SdpExpectError:
        raise _refuse(key, raw, "is not a percentage", fix) from None
    if tolerance is None or not tolerance.fraction:
        raise _refuse(key, raw, "is a count, not a percentage (a rate is a share of the "
                      "records checked)", fix)
    return Bound(tolerance.text, Fraction(tolerance.numerator, tolerance.denominator), key)


def _read_min_records(key: str, raw: str) -> int:
    value = raw.strip()
    if not value.isascii() or not value.isdigit() or int(value) > _MAX_MIN_RECORDS:
        raise _refuse(key, raw, "is not a whole number of records",
                      "write a whole number of records, e.g. \"100\" (an update that "
                      "checked fewer records than this never alerts); docs/alerts.md")
    return int(value)


def read_alert_settings(configuration: Mapping[str, str]) -> AlertSettings:
    """The ``sdp_expect.alert.*`` keys of the pipeline settings, checked.

    :raises SdpExpectError: SDPX-CFG-202 for a key it does not know (a misspelt
        setting) or a value it cannot read, naming the key.
    """
    values: dict[str, Any] = {}
    webhook: Optional[str] = None
    for key, raw in sorted(configuration.items()):
        if not key.startswith(ALERT_PREFIX):
            continue
        raw = str(raw)
        rest = key[len(ALERT_PREFIX):]
        name = rest.rsplit(".", 1)[-1]
        if rest == WEBHOOK:
            url = raw.strip()
            problem = webhook_url_problem(url)
            if problem:
                raise _refuse(key, raw, problem, "give the URL that receives the alerts, "
                              "e.g. https://hooks.example.com/dq; docs/alerts.md")
            webhook = url
        elif name not in _PER_RULE:
            raise SdpExpectError(
                "SDPX-CFG-202", f"{key} is not an alert setting",
                fix=f"write {ALERT_PREFIX}<setting>, {ALERT_PREFIX}<dataset>.<setting> or "
                f"{ALERT_PREFIX}<dataset>.<rule>.<setting>, where <setting> is max_rate, "
                f"max_rise or min_records (webhook only as {KEY_WEBHOOK}); docs/alerts.md")
        elif name in _BOUNDS:
            values[key] = _read_bound(key, raw)
        else:
            values[key] = _read_min_records(key, raw)
    return AlertSettings(values=values, webhook=webhook)


# --------------------------------------------------------------------------- numbers as text


_THOUSANDTH = decimal.Decimal("0.001")


def _decimal(value: Fraction) -> decimal.Decimal:
    with decimal.localcontext() as context:
        context.prec = 60
        exact = decimal.Decimal(value.numerator) / decimal.Decimal(value.denominator)
        return exact.quantize(_THOUSANDTH, rounding=decimal.ROUND_HALF_UP)


def rounded_percent(rate: Optional[Fraction]) -> Optional[float]:
    """A rate (or a change of rate) in percent, rounded half up to 3 places, for JSON."""
    return None if rate is None else float(_decimal(rate * 100))


def _plain(value: decimal.Decimal) -> str:
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def percent_text(rate: Fraction) -> str:
    """``1.25%``: a rate in percent, rounded half up to 3 places, no trailing zeros."""
    return _plain(_decimal(rate * 100)) + "%"


def points_text(change: Fraction) -> str:
    """``+0.8 pts``: a change of rate in percentage points, signed."""
    text = _plain(_decimal(change * 100))
    return f"{'' if text.startswith('-') else '+'}{text} pts"


# --------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class Alert:
    """A rule whose failure rate in an update passed a bound.

    :param trend: The rule's trend; its latest point is the update that alerted.
    :param kind: ``max_rate`` or ``max_rise``.
    :param bound: The bound passed.
    """

    trend: RuleTrend
    kind: str
    bound: Bound

    @property
    def rate(self) -> Fraction:
        """The update's failure rate."""
        rate = self.trend.latest.rate
        assert rate is not None
        return rate

    def text(self) -> str:
        """One line for people."""
        trend, latest = self.trend, self.trend.latest
        head = (f"{trend.dataset}.{trend.expectation}: {latest.failed} of {latest.total} "
                f"records failed ({percent_text(self.rate)})")
        recent = trend.recent_rate()
        if self.kind == MAX_RATE:
            return f"{head}, above max_rate {self.bound.text} ({self.bound.key})"
        assert recent is not None
        count = len(trend.recent())
        return (f"{head}, {points_text(self.rate - recent)} over its recent rate "
                f"{percent_text(recent)} ({count} update{'s' if count != 1 else ''}), "
                f"more than max_rise {self.bound.text} ({self.bound.key})")

    def as_dict(self) -> dict[str, Any]:
        """The alert's JSON (the summary's ``alerts`` entries and the webhook's message,
        docs/alerts.md#the-json-of-an-alert)."""
        trend, latest = self.trend, self.trend.latest
        recent_points = trend.recent()
        recent = trend.recent_rate()
        return {
            "schema": MESSAGE_SCHEMA,
            "pipeline": trend.pipeline,
            "update_id": latest.update_id,
            "update_time": latest.update_time.isoformat(),
            "dataset": trend.dataset,
            "expectation": trend.expectation,
            "action": trend.action,
            "kind": self.kind,
            "failed_records": latest.failed,
            "total_records": latest.total,
            "failure_percentage": rounded_percent(self.rate),
            "bound": self.bound.text,
            "bound_percentage": rounded_percent(self.bound.value),
            "setting": self.bound.key,
            "recent_updates": len(recent_points),
            "recent_failed_records": sum(p.failed for p in recent_points),
            "recent_total_records": sum(p.total for p in recent_points),
            "recent_failure_percentage": rounded_percent(recent),
            "change_points": rounded_percent(None if recent is None else self.rate - recent),
            "text": self.text(),
        }


def evaluate_alerts(settings: AlertSettings, trends: Iterable[RuleTrend], *,
                    update_id: Optional[str] = None) -> list[Alert]:
    """The alerts of an update: for each rule whose latest point is that update (``None``:
    each rule's latest point), which checked at least its ``min_records``:

    - ``max_rate``: its rate is above the bound (``failed / total > bound``);
    - ``max_rise``: it has a recent rate (:meth:`RuleTrend.recent_rate`, the pooled rate
      of the :data:`~sdp_expect.quality.trends.RECENT_UPDATES` earlier updates that
      checked records) and its rate minus that rate is above the bound.

    Exactly at a bound is no alert. In the order of the trends, ``max_rate`` first.
    """
    alerts: list[Alert] = []
    for trend in trends:
        latest = trend.latest
        if update_id is not None and latest.update_id != update_id:
            continue
        rate = latest.rate
        if rate is None or latest.total < settings.min_records(trend.dataset,
                                                               trend.expectation):
            continue
        over = settings.bound(trend.dataset, trend.expectation, MAX_RATE)
        if over is not None and rate > over.value:
            alerts.append(Alert(trend, MAX_RATE, over))
        rise = settings.bound(trend.dataset, trend.expectation, MAX_RISE)
        recent = trend.recent_rate(RECENT_UPDATES)
        if rise is not None and recent is not None and rate - recent > rise.value:
            alerts.append(Alert(trend, MAX_RISE, rise))
    return alerts
