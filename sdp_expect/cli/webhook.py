"""Posting alerts to a webhook (docs/alerts.md#the-webhook).

One HTTP POST per alert, its body the alert's JSON
(:meth:`sdp_expect.quality.alerts.Alert.as_dict`), with the standard library's
``urllib.request``: a single POST needs no HTTP client dependency. A POST that may succeed
later (no answer, HTTP 429 or 5xx) is tried again after :data:`RETRY_PAUSES`; a delivery
that still fails (or fails otherwise: another status than 2xx) is returned as such, never
raised: the caller reports it, and the run's exit status does not change.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Optional, Sequence, TextIO

from sdp_expect.base.project import UsageProblem
from sdp_expect.base.terminal import write_text
from sdp_expect.cli.exit_codes import version
from sdp_expect.quality.alerts import AlertSettings, read_alert_settings, webhook_url_problem

__all__ = ["RETRY_PAUSES", "TIMEOUT_SECONDS", "Delivery", "alert_settings", "deliver",
           "post_alert"]

TIMEOUT_SECONDS = 5.0
"""How long one POST may take (connecting and answering) before it counts as failed."""

RETRY_PAUSES = (1.0, 3.0)
"""Seconds to wait before each new try of a POST that may succeed later: no answer
(refused, timed out), HTTP 429 or 5xx. One pause per retry: three tries in all."""


@dataclass(frozen=True)
class Delivery:
    """What became of one alert's POST.

    :param url: Where it was posted.
    :param dataset: The alert's dataset.
    :param expectation: The alert's rule.
    :param kind: The alert's kind.
    :param ok: True when the server answered with a 2xx status.
    :param status: The HTTP status of the last try, when the server answered.
    :param error: Why the last try failed, when it did.
    :param tries: How many POSTs were made.
    """

    url: str
    dataset: str
    expectation: str
    kind: str
    ok: bool
    status: Optional[int] = None
    error: Optional[str] = None
    tries: int = 1

    @property
    def worth_retrying(self) -> bool:
        """A failure that may not happen again: no answer, HTTP 429 or 5xx."""
        return not self.ok and (self.status is None or self.status == 429
                                or self.status >= 500)

    def as_dict(self) -> dict[str, Any]:
        """An ``alert_deliveries`` entry of ``run --format json``."""
        return {"url": self.url, "dataset": self.dataset, "expectation": self.expectation,
                "kind": self.kind, "ok": self.ok, "status": self.status, "error": self.error,
                "tries": self.tries}


def alert_settings(configuration: Mapping[str, str], webhook: Optional[str]) -> AlertSettings:
    """The pipeline's alert settings, a webhook given on the command line (``webhook``)
    winning over the setting's.

    :raises SdpExpectError: SDPX-CFG-202 for a setting it cannot read.
    :raises UsageProblem: for a ``webhook`` that is not an http(s) URL.
    """
    settings = read_alert_settings(configuration)
    if webhook is None:
        return settings
    problem = webhook_url_problem(webhook)
    if problem:
        raise UsageProblem(f"--alert-webhook {webhook!r} {problem}")
    return AlertSettings(values=settings.values, webhook=webhook)


def post_alert(url: str, message: Mapping[str, Any], *, timeout: float = TIMEOUT_SECONDS,
               pauses: Sequence[float] = RETRY_PAUSES,
               sleep: Callable[[float], None] = time.sleep) -> Delivery:
    """POST ``message`` (an alert's JSON) to ``url``, tried again after each of ``pauses``
    while the failure may be passing (:attr:`Delivery.worth_retrying`); the outcome, never
    an exception."""
    delivery = _post_once(url, message, timeout)
    for tries, pause in enumerate(pauses, start=2):
        if not delivery.worth_retrying:
            break
        sleep(pause)
        delivery = replace(_post_once(url, message, timeout), tries=tries)
    return delivery


def _post_once(url: str, message: Mapping[str, Any], timeout: float) -> Delivery:
    """One POST of ``message`` to ``url``."""
    body = json.dumps(message, ensure_ascii=False).encode("utf-8")
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json; charset=utf-8",
        "User-Agent": f"sdp-expect/{version()}"})
    dataset, expectation = str(message.get("dataset")), str(message.get("expectation"))
    kind = str(message.get("kind"))

    def failed(error: str, status: Optional[int] = None) -> Delivery:
        return Delivery(url, dataset, expectation, kind, ok=False, status=status, error=error)

    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status = int(response.status)
    except urllib.error.HTTPError as error:  # a status the opener does not follow
        return failed(f"HTTP {error.code} {error.reason}", error.code)
    except Exception as error:  # refused, timed out, bad URL, TLS: reported, not raised
        reason = getattr(error, "reason", None) or error
        return failed(f"{type(error).__name__}: {reason}")
    if not 200 <= status < 300:
        return failed(f"HTTP {status}", status)
    return Delivery(url, dataset, expectation, kind, ok=True, status=status)


def deliver(messages: Sequence[Mapping[str, Any]], url: Optional[str], *, command: str,
            stderr: TextIO, sleep: Callable[[float], None] = time.sleep) -> list[Delivery]:
    """POST each alert's JSON to the webhook ``url``, if any (:func:`post_alert`: tried
    again while the failure may pass; once an alert got no answer after every try, the
    next ones are tried once each, so that a webhook that is down delays the command by
    one alert's tries, not every alert's); each failed delivery is said on ``stderr``
    (``command`` names who says it). The outcomes, in order."""
    if not url:
        return []
    deliveries: list[Delivery] = []
    pauses: Sequence[float] = RETRY_PAUSES
    for message in messages:
        delivery = post_alert(url, message, pauses=pauses, sleep=sleep)
        if not delivery.ok and delivery.status is None:
            pauses = ()  # no answer after every try: the next alerts are tried once each
        deliveries.append(delivery)
    for delivery in deliveries:
        if not delivery.ok:
            tried = f" ({delivery.tries} tries)" if delivery.tries > 1 else ""
            write_text(stderr, f"{command}: the alert {delivery.kind} of {delivery.dataset}."
                       f"{delivery.expectation} was not delivered to the webhook {url}: "
                       f"{delivery.error}{tried} (the exit status does not change)\n")
    return deliveries
