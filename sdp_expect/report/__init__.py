"""The data-quality report of a pipeline: what ``sdp-expect run`` prints at the end
and ``sdp-expect report`` shows, as text, JSON or an HTML page.

- :mod:`~sdp_expect.report.model`: the report's values (datasets, rules, quarantines);
- :mod:`~sdp_expect.report.reader`: reading the metrics and quarantine tables (in a
  process of its own), and the history ``sdp-expect run`` keeps;
- :mod:`~sdp_expect.report.build`: the report made of a reading and what a run said;
- :mod:`~sdp_expect.report.history_table`: the history table ``sdp_expect_dq_history``
  and its event-log view, each update's counts appended after the update
  (docs/history.md);
- :mod:`~sdp_expect.report.trends`: each rule's failure rate over the recorded
  updates, from the history table's rows;
- :mod:`~sdp_expect.report.text`, :mod:`~sdp_expect.report.as_json`,
  :mod:`~sdp_expect.report.html`: the report shown (:mod:`~sdp_expect.report.svg_chart`:
  the page's trend charts).

Only the reader's own process and the history writer (inside its functions,
given a Spark session) import pyspark.
"""
