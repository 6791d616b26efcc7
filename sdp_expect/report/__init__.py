"""The data-quality report of a pipeline: what ``sdp-expect run`` prints at the end
and ``sdp-expect report`` shows, as text, JSON or an HTML page.

- :mod:`~sdp_expect.report.reader`: reading the metrics and quarantine tables (in a
  process of its own, or through a server that is up), and the history ``sdp-expect run``
  keeps;
- :mod:`~sdp_expect.report.build`: the report made of a reading and what a run said, as
  the values of :mod:`~sdp_expect.quality.summary`;
- :mod:`~sdp_expect.report.text`, :mod:`~sdp_expect.report.as_json`,
  :mod:`~sdp_expect.report.html`: the report shown (:mod:`~sdp_expect.report.svg_chart`:
  the page's trend charts); :mod:`~sdp_expect.report.comparison`: each rule's trend and
  the alerts, as lines.

The values, the history table and the trends are in :mod:`sdp_expect.quality`. Only the
reader's own process imports pyspark.
"""
