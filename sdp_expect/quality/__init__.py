"""Quality over time: one update's summary as values (``summary``), the history table and
its event log view (``history_table``), each rule's trend (``trends``) and the alerts on it
(``alerts``).
"""
