"""The progress of a ``sdp-expect run``: which flows are running, done or failed, and for how long.

What it shows comes from the flows' states that
:class:`sdp_expect.runtime.spark_pipelines.EventLog` follows in the child's event
lines (``EventLog.flows``: each flow's last state, in the order the flows were
first reported); nothing sdp-expect printed itself is read back.

Three modes (``--progress``, :func:`choose_mode`):

- ``live``: one line at the bottom of the terminal, rewritten in place
  (``\\r`` and *erase to the end of the line*), redrawn every second by a timer
  thread and after each line of the run's output, which is written above it
  (the live line is erased, the output line written, the live line drawn
  again). It is cut to the terminal's width so that it never wraps. When the
  run ends it is drawn one last time and stays, as the run's last line.
- ``plain``: for a log or a pipe. The event lines already say every flow's
  state change, with the time; what this adds is the line below, with the
  elapsed time and the counts, after the events of flows that ended (completed,
  failed, skipped; flows that end together share one line, :data:`SETTLE`), and
  after a minute without any output (:data:`HEARTBEAT`), so that a long flow is
  seen to be still running.
- ``none``: nothing (the output of sdp-expect before this existed).

The line, the same in both modes::

    [00:42] 3/7 flows done · failed: 0 · running: orders_silver, orders_silver_quarantine

*done* counts the flows that ended (completed, failed or skipped); *failed* and
*skipped* say how many of them did not complete. The counts come before the
running flows' names so that cutting the line to the terminal's width only ever
shortens the list of names. The number of flows is the number reported so far:
SDP reports every flow of the update as ``QUEUED`` when the run starts (and those
that ``--refresh`` leaves out as ``EXCLUDED``: not counted), so it is the
update's from then on (before that, the line says that no flow was reported yet).
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence, TextIO

from sdp_expect.base.terminal import paint, write_text
from sdp_expect.runtime.run_output import line_kind, short_name

__all__ = [
    "HEARTBEAT",
    "MODES",
    "SETTLE",
    "Progress",
    "Tally",
    "choose_mode",
    "format_elapsed",
    "render",
    "tally",
    "terminal_width",
]

MODES = ("auto", "live", "plain", "none")
"""The choices of ``--progress``."""
HEARTBEAT = 60.0
"""Seconds without any output after which the ``plain`` mode prints the line again."""
SETTLE = 1.0
"""``plain``: after a flow ended, the line waits until this many seconds passed without
output, or since the flow ended when the next event comes: it never comes between an
event and its error line, and flows that end together share one line."""

RUNNING_STATES = frozenset({"PLANNING", "STARTING", "RUNNING", "IDLE"})
"""The states of a flow that is being worked on (SDP's ``FlowStatus``)."""
COMPLETED_STATES = frozenset({"COMPLETED"})
FAILED_STATES = frozenset({"FAILED"})
SKIPPED_STATES = frozenset({"SKIPPED", "STOPPED", "CANCELED"})
"""The states of a flow that ended without running to completion or failing."""
LEFT_OUT_STATES = frozenset({"EXCLUDED"})
"""The state of a flow that is not part of the update (``--refresh`` of other flows):
not counted."""
_STYLE = re.compile(r"\x1b\[[0-9;]*m")
"""An ANSI colour (``highlight`` colours some event lines)."""


def choose_mode(choice: str, stream: TextIO) -> str:
    """``live``, ``plain`` or ``none`` for the ``--progress`` choice and the stream it goes to.

    ``auto`` is ``live`` on a terminal that can erase a line (``TERM`` is not
    ``dumb``) and ``plain`` otherwise.
    """
    if choice != "auto":
        return choice
    isatty = getattr(stream, "isatty", None)
    terminal = bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"
    return "live" if terminal else "plain"


def terminal_width(stream: TextIO) -> int:
    """The width of the terminal ``stream`` writes to.

    ``COLUMNS`` when set, else the size of the stream's own terminal (the events
    may go to stderr), else :func:`shutil.get_terminal_size` (80 when unknown).
    """
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size().columns


@dataclass(frozen=True)
class Tally:
    """The flows of a run by what they are doing."""

    total: int
    completed: int
    failed: int
    skipped: int
    running: tuple[str, ...]
    """The running flows' short names (without catalog and database), in the order the
    flows were first reported."""

    @property
    def done(self) -> int:
        """The flows that ended: completed, failed or skipped."""
        return self.completed + self.failed + self.skipped


def tally(flows: Mapping[str, str]) -> Tally:
    """Count ``flows`` (a flow's name -> its last state, as ``EventLog.flows``); the flows
    left out of the update (:data:`LEFT_OUT_STATES`) are not counted."""
    states = [state for state in flows.values() if state not in LEFT_OUT_STATES]
    return Tally(total=len(states),
                 completed=sum(state in COMPLETED_STATES for state in states),
                 failed=sum(state in FAILED_STATES for state in states),
                 skipped=sum(state in SKIPPED_STATES for state in states),
                 running=tuple(short_name(name) for name, state in flows.items()
                               if state in RUNNING_STATES))


def format_elapsed(seconds: float) -> str:
    """``MM:SS``, or ``H:MM:SS`` from an hour on."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def render(counts: Tally, elapsed: float, *, color: bool = False, width: Optional[int] = None,
           unicode: bool = True, waiting: str = "no flow reported yet") -> str:
    """The progress line (no newline).

    :param counts: From :func:`tally`.
    :param elapsed: Seconds since the run started.
    :param color: Colour it (ANSI): the time dim, failures red, skips yellow, the count
        green when every flow ended and none failed.
    :param width: Cut it to fit in a terminal this wide (at most ``width - 1``
        characters, so that it never wraps; the cut is marked with an ellipsis).
    :param unicode: Use ``·`` and ``…``; else ``-`` and ``...`` (a stream whose
        encoding has no such characters).
    :param waiting: What it says before any flow is reported.
    """
    separator, ellipsis = (" · ", "…") if unicode else (" - ", "...")
    parts: list[tuple[str, str]] = [(f"[{format_elapsed(elapsed)}]", "dim"), (" ", "")]
    if counts.total == 0:
        parts.append((waiting, ""))
    else:
        finished = counts.done == counts.total and not counts.failed
        parts.append((f"{counts.done}/{counts.total} flows done", "green" if finished else ""))
        parts += [(separator, ""), (f"failed: {counts.failed}",
                                    "bold red" if counts.failed else "")]
        if counts.skipped:
            parts += [(separator, ""), (f"skipped: {counts.skipped}", "yellow")]
        if counts.running:
            parts += [(separator, ""), ("running: " + ", ".join(counts.running), "")]
    if width is not None:
        parts = _cut(parts, max(width - 1, len(ellipsis) + 1), ellipsis)
    return "".join(paint(text, style, color and bool(style)) for text, style in parts)


def _cut(parts: list[tuple[str, str]], room: int, ellipsis: str) -> list[tuple[str, str]]:
    """``parts`` (text, style) cut to ``room`` visible characters, the cut marked."""
    if sum(len(text) for text, _ in parts) <= room:
        return parts
    room -= len(ellipsis)
    kept: list[tuple[str, str]] = []
    for text, style in parts:
        if room <= 0:
            break
        kept.append((text[:room], style))
        room -= len(text)
    return [*kept, (ellipsis, "")]


def _encodes(stream: TextIO, text: str) -> bool:
    try:
        text.encode(getattr(stream, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


class Progress:
    """Shows the progress of a run on ``out``, in the ``live`` or ``plain`` mode.

    Every line of the run's output goes through :meth:`show`, with the flows' states
    after the child's line it comes from, so that the live line is erased before the
    output and drawn again, up to date, after it. The owner of the run calls
    :meth:`begin` when a ``spark-pipelines`` child starts, :meth:`pause` when the
    child has ended (before anything else is written) and :meth:`close` once at the
    end, before the summary: from then on nothing more is written, by any thread.
    A timer thread (started by the first :meth:`begin`, a daemon) calls
    :meth:`tick` every ``interval`` seconds.

    :param out: Where the run's output goes.
    :param mode: ``live`` or ``plain`` (:func:`choose_mode`).
    :param color: Colour the line.
    :param write: Writes text to a stream (default :func:`write_text`).
    :param clock: Seconds, monotonic (tests give their own).
    :param width: The terminal's width (default :func:`terminal_width` of ``out``,
        read again at each redraw: the window may be resized).
    :param interval: Seconds between the timer's ticks.
    :param heartbeat: ``plain``: seconds without output after which the line is printed.
    :param settle: ``plain``: the line that follows flows' ends waits this long for
        more of them (:data:`SETTLE`).
    :param waiting: What the line says before any flow is reported.
    """

    def __init__(self, out: TextIO, mode: str, *, color: bool = False,
                 write: Callable[[TextIO, str], None] = write_text,
                 clock: Callable[[], float] = time.monotonic,
                 width: Optional[Callable[[], int]] = None, interval: float = 1.0,
                 heartbeat: float = HEARTBEAT, settle: float = SETTLE,
                 waiting: str = "no flow reported yet") -> None:
        if mode not in ("live", "plain"):
            raise ValueError(f"progress mode {mode!r}: expected 'live' or 'plain'")
        self.out = out
        self.mode = mode
        self.color = color
        self.waiting = waiting
        self._write = write
        self._clock = clock
        self._width = width or (lambda: terminal_width(out))
        self._unicode = _encodes(out, "·…")
        self._interval = interval
        self._heartbeat = heartbeat
        self._settle = settle
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._timer: Optional[threading.Thread] = None
        self._started: Optional[float] = None
        self._flows: dict[str, str] = {}
        self._active = False  # between begin() and pause(): the live line may be drawn
        self._closed = False
        self._drawn = ""  # the live line on the screen now ("" when none)
        self._told = (0, 0, 0)  # plain: (done, failed, skipped) when the line was last printed
        self._pending_since: Optional[float] = None  # plain: a flow ended since
        self._last_output = 0.0

    # ------------------------------------------------------------------ what the run calls

    def begin(self) -> None:
        """A ``spark-pipelines`` child starts (again, after a retry): follow its flows.

        The elapsed time counts from the first call; the timer thread starts then.
        """
        with self._lock:
            if self._closed:
                return
            now = self._clock()
            if self._started is None:
                self._started = now
            self._flows, self._told, self._pending_since = {}, (0, 0, 0), None
            self._last_output = now
            self._active = True
            self._draw()
        if self._timer is None:
            self._timer = threading.Thread(target=self._run_timer, name="sdp-expect progress",
                                           daemon=True)
            self._timer.start()

    def show(self, lines: Sequence[str], flows: Optional[Mapping[str, str]] = None) -> None:
        """Write lines of the run's output (each with its newline) above the live line.

        :param lines: What the run shows of one line of the child's output (none, one
            or a few lines).
        :param flows: The flows' states after that line (``EventLog.flows``), when it
            was one of the events' stream.
        """
        with self._lock:
            if self._closed:
                for line in lines:
                    self._write(self.out, line)
                return
            if self.mode == "live":
                if lines:
                    self._erase()
                for line in lines:
                    self._put(line if line.endswith("\n") else line + "\n")
                if flows is not None:
                    self._flows = dict(flows)
                self._draw()
                return
            for line in lines:
                # after the lines of the event that ended a flow (its error line), and
                # once for the flows that end together
                if self._pending_since is not None \
                        and self._clock() - self._pending_since >= self._settle \
                        and line_kind(_STYLE.sub("", line)) == "event":
                    self._tell()
                self._put(line)
            if flows is not None:
                self._flows = dict(flows)
                counts = tally(self._flows)
                if (counts.done, counts.failed, counts.skipped) == self._told:
                    self._pending_since = None  # e.g. a failed flow started again, and failed
                elif self._pending_since is None:
                    self._pending_since = self._clock()

    def tick(self) -> None:
        """Once a second (the timer): redraw the elapsed time; ``plain``: print the line
        when flows ended and the output has been quiet for :data:`SETTLE` seconds, or
        when it has been quiet for :data:`HEARTBEAT` seconds."""
        with self._lock:
            if self._closed or not self._active:
                return
            if self.mode == "live":
                self._draw()
                return
            quiet = self._clock() - self._last_output
            if (self._pending_since is not None and quiet >= self._settle) \
                    or quiet >= self._heartbeat:
                self._tell()

    def pause(self) -> None:
        """The child ended: erase the live line, print what ``plain`` still holds."""
        with self._lock:
            if self._closed:
                return
            if self.mode == "live":
                self._erase()
            elif self._pending_since is not None:
                self._tell()
            self._active = False

    def close(self) -> None:
        """The run is over: stop the timer, leave the last line, write nothing more.

        ``live``: the line, drawn one last time, stays as the run's last line (when
        flows were reported). ``plain``: the line, unless the last one printed says
        the same.
        """
        with self._lock:
            if self._closed:
                return
            self.pause()
            counts = tally(self._flows)
            if self._started is not None and counts.total:
                if self.mode == "live" or (counts.done, counts.failed, counts.skipped) \
                        != self._told:
                    self._put(self._line(width=self.mode == "live") + "\n")
            self._closed = True
        self._stop.set()
        timer = self._timer
        if timer is not None and timer is not threading.current_thread():
            timer.join(5)

    # ------------------------------------------------------------------ drawing

    def _run_timer(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.tick()
            except (OSError, ValueError):  # the stream is gone (a pipe's reader ended):
                return  # the main thread, writing next, reports it

    def _elapsed(self) -> float:
        return 0.0 if self._started is None else self._clock() - self._started

    def _line(self, *, width: bool) -> str:
        return render(tally(self._flows), self._elapsed(), color=self.color,
                      width=self._width() if width else None, unicode=self._unicode,
                      waiting=self.waiting)

    def _put(self, text: str) -> None:
        self._write(self.out, text)
        self._last_output = self._clock()

    def _tell(self) -> None:
        """``plain``: print the line."""
        counts = tally(self._flows)
        self._told = (counts.done, counts.failed, counts.skipped)
        self._pending_since = None
        self._put(self._line(width=False) + "\n")

    def _draw(self) -> None:
        """``live``: draw the line, when it changed."""
        if self.mode != "live" or not self._active:
            return
        line = self._line(width=True)
        if line != self._drawn:
            self._write(self.out, "\r" + line + "\x1b[K")
            self._drawn = line

    def _erase(self) -> None:
        if self._drawn:
            self._write(self.out, "\r\x1b[K")
            self._drawn = ""
