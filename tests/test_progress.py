"""The progress of ``sdp-expect run`` (issue 17.5), fed with real ``spark-pipelines`` output.

The runs replayed here are real: the stdout of the example project's run on each
Spark line (``tests/fixtures/progress``, captured by its ``capture.py``) and the
output of real failing runs (``tests/fixtures/spark_output``: failed and skipped
flows). Each line goes, as in ``_run_once``, to :class:`EventLog`, to
:class:`ChildOutput` and to :class:`Progress`, with a clock that follows the
events' own timestamps (the timer's ticks are played at every second between two
lines). The live mode writes to a stream that says it is a terminal, and what a
terminal would show is rebuilt from what was written (:func:`cli_helpers.screen`);
the command itself is run on a pseudo-terminal with a stand-in ``spark-pipelines``
that replays the real example run (fast), and, in test_cli_run_report.py, on the
real example project.
"""

from __future__ import annotations

import io
import itertools
import re
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from cli_helpers import (
    REPO,
    replaying_project,
    screen,
    sdp_expect,
    sdp_expect_on_terminal,
)

from sdp_expect.runtime.progress import (
    SETTLE,
    Progress,
    Tally,
    choose_mode,
    format_elapsed,
    render,
    tally,
)
from sdp_expect.runtime.run_output import ChildOutput
from sdp_expect.runtime.spark_pipelines import EventLog, highlight

EXAMPLES = sorted((REPO / "tests" / "fixtures" / "progress").glob("pyspark-*-example.txt"))
REFRESHES = sorted((REPO / "tests" / "fixtures" / "progress").glob("pyspark-*-refresh.txt"))
FAILURES = sorted((REPO / "tests" / "fixtures" / "spark_output").glob("pyspark-*-*.txt"))
RUNS = EXAMPLES + REFRESHES + FAILURES
STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d): ")
ENDED = re.compile(r"Flow \S+ (has COMPLETED|has FAILED|SKIPPED)")
PROGRESS = re.compile(r"^\[(\d\d):(\d\d)\] (.*)$")
STYLE = re.compile(r"\x1b\[[0-9;]*m")
DRAW = re.compile(r"\r([^\r\n]*?)\x1b\[K")
"""A live line drawn: carriage return, the line, erase to the end of the line."""
FINAL = {"example": "6/6 flows done · failed: 0",
         "refresh": "1/1 flows done · failed: 0",
         "streaming": "3/3 flows done · failed: 2 · skipped: 1",
         "materialized_view": "2/2 flows done · failed: 2"}
"""The last line of each kind of run: the example completes its six flows; refreshing
one of them counts that one (the five others are EXCLUDED: not part of the update); a
failing streaming table fails its two flows and skips its metrics; a failing
materialized view fails with its metrics flow."""


def kind_of(path: Path) -> str:
    return path.stem.split("-", 2)[2]


def stamp(line: str) -> float | None:
    found = STAMP.match(line)
    return datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S").timestamp() if found else None


class Terminal(io.StringIO):
    """A stream that says it is a terminal (or not); what was written is kept."""

    def __init__(self, tty: bool = True) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@dataclass
class Replay:
    out: Terminal
    shown: list[str]
    """What the run shows of the child's output without progress (ChildOutput's lines)."""
    start: float
    last_end: float
    """When the last event that ended a flow came (seconds, as the events' clock)."""


def replay(path: Path, mode: str, *, width: int = 200, color: bool = False) -> Replay:
    """Feed a real run's output to the progress as ``_run_once`` does; close it."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(t for t in map(stamp, lines) if t is not None)
    now = [0.0]
    out = Terminal()
    # The timer thread waits an hour between ticks: its ticks are played here, in order.
    progress = Progress(out, mode, color=color, clock=lambda: now[0], width=lambda: width,
                        interval=3600)
    events, child = EventLog(), ChildOutput(None)
    shown: list[str] = []
    last_end = 0.0
    progress.begin()
    for line in lines:
        at = stamp(line)
        if at is not None:
            for _ in range(int(at - start - now[0])):
                now[0] += 1
                progress.tick()
            now[0] = at - start
            if ENDED.search(line):
                last_end = now[0]
        events.feed(line)
        kept = [highlight(text, color) for text in child.feed(line)]
        shown += kept
        progress.show(kept, events.flows)
    kept = [highlight(text, color) for text in child.finish()]
    shown += kept
    progress.show(kept)
    progress.pause()
    progress.close()
    return Replay(out, shown, start, last_end)


def shown_by_default(path: Path) -> list[str]:
    """What ``sdp-expect run`` shows of a child's output without progress."""
    child = ChildOutput(None)
    shown = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        shown += child.feed(line)
    return shown + child.finish()


def progress_lines(lines: list[str]) -> list[tuple[int, str]]:
    """The progress lines among ``lines``: (elapsed seconds, the rest)."""
    found = []
    for line in lines:
        match = PROGRESS.match(STYLE.sub("", line.rstrip("\n")))
        if match:
            found.append((int(match.group(1)) * 60 + int(match.group(2)), match.group(3)))
    return found


# --------------------------------------------------------------------------- plain


@pytest.mark.parametrize("path", RUNS, ids=[p.stem for p in RUNS])
def test_plain_mode_adds_a_line_when_flows_end_and_leaves_the_events_alone(path: Path) -> None:
    run = replay(path, "plain")
    lines = run.out.getvalue().splitlines(keepends=True)
    told = progress_lines(lines)
    # Every event line is shown as before, once, in order: the progress only adds lines.
    assert [line for line in lines if not PROGRESS.match(line)] == run.shown
    assert told, lines
    ends = sum(bool(ENDED.search(line)) for line in run.shown)
    assert len(told) <= ends
    assert [t for t, _ in told] == sorted(t for t, _ in told)
    done = [int(text.split("/")[0]) for _, text in told]
    assert done == sorted(done)
    # A progress line never parts an event from its error line.
    for before, after in itertools.pairwise(lines):
        if PROGRESS.match(before):
            assert not after.startswith("Error: "), (before, after)
    elapsed, text = told[-1]
    assert text == FINAL[kind_of(path)]
    assert elapsed >= run.last_end
    if kind_of(path) in ("example", "refresh"):
        # printed by the timer once the output was quiet for a second after the last end
        assert elapsed == run.last_end + SETTLE
        assert len(told) < ends or kind_of(path) == "refresh"  # ends together: one line
        assert lines.index(next(line for line in lines if "Run is COMPLETED" in line)) \
            == len(lines) - 1
        assert PROGRESS.match(lines[-2])


def test_plain_mode_prints_the_line_after_a_minute_of_silence() -> None:
    now = [0.0]
    out = Terminal(tty=False)
    progress = Progress(out, "plain", clock=lambda: now[0], interval=3600)
    progress.begin()
    progress.show(["2026-11-30 21:01:05: Flow spark_catalog.default.orders is RUNNING.\n"],
                  {"spark_catalog.default.orders": "RUNNING"})
    now[0] = 59.5
    progress.tick()
    assert out.getvalue().count("\n") == 1
    now[0] = 60.0
    progress.tick()
    assert out.getvalue().splitlines()[-1] == "[01:00] 0/1 flows done · failed: 0 · running: orders"
    now[0] = 61.0
    progress.tick()
    assert out.getvalue().count("\n") == 2  # silence counts again from that line
    now[0] = 120.0
    progress.tick()
    assert out.getvalue().splitlines()[-1].startswith("[02:00] 0/1 flows done")
    progress.close()
    assert out.getvalue().count("\n") == 3  # nothing new to say


# --------------------------------------------------------------------------- live


@pytest.mark.parametrize("path", RUNS, ids=[p.stem for p in RUNS])
def test_live_mode_draws_below_the_events_and_leaves_its_last_line(path: Path) -> None:
    run = replay(path, "live")
    written = run.out.getvalue()
    shown = screen(written)
    # On the screen: the events as without progress, then the last progress line only.
    assert shown[:-1] == [line.rstrip("\n") for line in run.shown]
    final = PROGRESS.match(shown[-1])
    assert final and final.group(3) == FINAL[kind_of(path)], shown[-1]
    draws = DRAW.findall(written)
    assert len(draws) > len([line for line in run.shown if ENDED.search(line)])
    seconds = {int(m.group(1)) * 60 + int(m.group(2))
               for m in map(PROGRESS.match, draws) if m}
    assert seconds == set(range(max(seconds) + 1))  # redrawn every second
    if kind_of(path) in ("example", "refresh"):
        total = FINAL[kind_of(path)].split("/")[0]
        assert any(text.endswith(f"0/{total} flows done · failed: 0 · running: orders_bronze")
                   for text in draws), draws
        assert any(text.endswith("no flow reported yet") for text in draws)


@pytest.mark.parametrize("path", [*EXAMPLES[:1], *FAILURES[:1]], ids=["example", "failure"])
def test_live_mode_cuts_the_line_to_the_terminal_width(path: Path) -> None:
    wide = DRAW.findall(replay(path, "live", color=True).out.getvalue())
    narrow = DRAW.findall(replay(path, "live", width=50, color=True).out.getvalue())
    assert len(wide) == len(narrow)
    cut = 0
    for full, short in zip(wide, narrow, strict=True):
        visible, whole = STYLE.sub("", short), STYLE.sub("", full)
        assert len(visible) <= 49, visible
        if len(whole) > 49:
            cut += 1
            assert visible == whole[:48] + "…"
        else:
            assert short == full
    assert cut
    # the counts come first: a cut line still says how many flows failed
    assert all("failed: " in STYLE.sub("", short) for short in narrow if "flows done" in short)


def test_live_mode_colours_failures_and_skips() -> None:
    path = next(p for p in FAILURES if kind_of(p) == "streaming")
    written = replay(path, "live", color=True).out.getvalue()
    final = written.rsplit("\r\x1b[K", 1)[-1]  # after the live line was erased
    assert final.endswith("\n") and final.count("\n") == 1
    final = final.rstrip("\n")
    assert re.fullmatch(r"\x1b\[2m\[\d\d:\d\d\]\x1b\[0m 3/3 flows done · "
                        r"\x1b\[1;31mfailed: 2\x1b\[0m · \x1b\[33mskipped: 1\x1b\[0m", final), final
    example = replay(EXAMPLES[0], "live", color=True).out.getvalue()
    assert example.endswith("]\x1b[0m \x1b[32m6/6 flows done\x1b[0m · failed: 0\n")


def test_the_timer_redraws_every_second_and_writes_nothing_after_close() -> None:
    now = [0.0]
    out = Terminal()
    progress = Progress(out, "live", clock=lambda: now[0], width=lambda: 80, interval=0.01)
    progress.begin()
    timers = [t for t in threading.enumerate() if t.name == "sdp-expect progress"]
    assert len(timers) == 1 and timers[0].daemon
    now[0] = 5.0
    deadline = time.monotonic() + 5
    while "[00:05]" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert out.getvalue().endswith("\r[00:05] no flow reported yet\x1b[K")
    progress.show(["2026-11-30 21:01:05: Flow spark_catalog.default.orders is RUNNING.\n"],
                  {"spark_catalog.default.orders": "RUNNING"})
    progress.close()
    assert not timers[0].is_alive()
    closed = out.getvalue()
    assert screen(closed)[-1] == "[00:05] 0/1 flows done · failed: 0 · running: orders"
    now[0] = 9.0
    time.sleep(0.1)
    assert out.getvalue() == closed  # nothing after close, from any thread
    progress.show(["after\n"])  # a line written after close is written as it is
    assert out.getvalue() == closed + "after\n"


def test_a_retry_follows_the_new_run_and_keeps_the_clock() -> None:
    now = [0.0]
    out = Terminal()
    progress = Progress(out, "live", clock=lambda: now[0], width=lambda: 80, interval=3600)
    progress.begin()
    now[0] = 3.0
    progress.show(["2026-11-30 21:01:05: Flow spark_catalog.default.a is QUEUED.\n"],
                  {"spark_catalog.default.a": "QUEUED"})
    progress.pause()
    assert out.getvalue().endswith("\r\x1b[K")  # erased before anything else is written
    now[0] = 10.0
    progress.begin()
    assert out.getvalue().endswith("\r[00:10] no flow reported yet\x1b[K")
    progress.close()


# --------------------------------------------------------------------------- the line


def test_render_the_line() -> None:
    counts = Tally(total=7, completed=3, failed=0, skipped=0,
                   running=("orders_silver", "orders_silver_to_quarantine"))
    line = ("[00:42] 3/7 flows done · failed: 0 · running: orders_silver, "
            "orders_silver_to_quarantine")
    assert render(counts, 42.9) == line
    assert render(counts, 42, width=40) == line[:38] + "…"
    assert len(render(counts, 42, width=40)) == 39  # never the last column: no wrap
    assert render(counts, 42, width=len(line) + 1) == line
    assert render(counts, 42, width=40, unicode=False) == "[00:42] 3/7 flows done - failed: 0 -..."
    assert STYLE.sub("", render(counts, 42, width=40, color=True)) == line[:38] + "…"
    assert len(render(counts, 42, width=3)) == 2
    assert render(Tally(0, 0, 0, 0, ()), 3) == "[00:03] no flow reported yet"
    assert render(Tally(4, 1, 2, 1, ()), 3725) == \
        "[1:02:05] 4/4 flows done · failed: 2 · skipped: 1"


def test_tally_of_real_states() -> None:
    path = next(p for p in FAILURES if kind_of(p) == "streaming")
    events = EventLog()
    counts = []
    for line in path.read_text(encoding="utf-8").splitlines():
        events.feed(line)
        counts.append(tally(events.flows))
    assert Tally(3, 0, 0, 0, ("orders_stream", "orders_stream_to_dq_records")) in counts
    assert counts[-1] == Tally(total=3, completed=0, failed=2, skipped=1, running=())


def test_format_elapsed() -> None:
    assert [format_elapsed(s) for s in (0, 0.9, 42, 600, 3599, 3600, 36125)] == [
        "00:00", "00:00", "00:42", "10:00", "59:59", "1:00:00", "10:02:05"]


def test_auto_is_live_on_a_terminal_and_plain_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    assert choose_mode("auto", Terminal(tty=True)) == "live"
    assert choose_mode("auto", Terminal(tty=False)) == "plain"
    assert choose_mode("plain", Terminal(tty=True)) == "plain"
    assert choose_mode("none", Terminal(tty=True)) == "none"
    monkeypatch.setenv("TERM", "dumb")  # cannot erase a line
    assert choose_mode("auto", Terminal(tty=True)) == "plain"
    with pytest.raises(ValueError):
        Progress(Terminal(), "auto")


# --------------------------------------------------------------------------- the command

REPLAY = """\
import os, sys, time
with open(os.environ["REPLAY"], encoding="utf-8") as handle:
    for line in handle:
        sys.stdout.write(line)
        sys.stdout.flush()
        if os.environ.get("STALL_AFTER", "\\0") in line:
            time.sleep(600)  # a long flow
"""


SERVER_LINE = "sdp-expect: a local Spark Connect server on port "
"""What a run says when it started the project's server for itself (a stand-in here)."""


@pytest.fixture
def replayed(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A project, and an environment whose spark-pipelines replays the real example run."""
    return replaying_project(tmp_path, REPLAY, EXAMPLES[-1])


def test_the_command_draws_live_on_a_terminal_and_ends_before_its_last_lines(
        replayed: tuple[Path, dict[str, str]]) -> None:
    project, env = replayed
    done = sdp_expect_on_terminal("run", "--no-summary", "--port-wait", "0", cwd=project,
                                  env=env, columns=60)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = screen(done.stdout)
    events = [line.rstrip("\n") for line in shown_by_default(EXAMPLES[-1])]
    # the run's first line, the project's server (started before the progress begins)
    assert shown[1].startswith(SERVER_LINE)
    assert shown[2:len(events) + 2] == events
    assert re.fullmatch(r"\[00:0\d\] 6/6 flows done · failed: 0", shown[len(events) + 2])
    assert shown[len(events) + 3].startswith("full log: ")
    assert shown[-1] == "sdp-expect run: COMPLETED (exit status 0)"
    tail = done.stdout[done.stdout.index("full log: "):]
    assert "\x1b[K" not in tail  # nothing drawn after the progress was closed
    assert all(len(STYLE.sub("", text)) <= 59 for text in DRAW.findall(done.stdout))


def test_the_command_prints_plain_lines_in_a_pipe_and_none_when_asked(
        replayed: tuple[Path, dict[str, str]]) -> None:
    project, env = replayed
    plain = sdp_expect("run", "--no-summary", "--port-wait", "0", cwd=project, env=env)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "\r" not in plain.stdout and "\x1b[" not in plain.stdout
    told = progress_lines(plain.stdout.splitlines())
    assert told and told[-1][1] == "6/6 flows done · failed: 0"
    none = sdp_expect("run", "--no-summary", "--port-wait", "0", "--progress", "none",
                      cwd=project, env=env)
    assert none.returncode == 0
    assert not progress_lines(none.stdout.splitlines())
    # each run started a server of its own (its port and time differ)
    assert [line for line in plain.stdout.splitlines() if not PROGRESS.match(line)
            and not line.startswith(("full log: ", SERVER_LINE))] == \
        [line for line in none.stdout.splitlines()
         if not line.startswith(("full log: ", SERVER_LINE))]


def test_ctrl_c_stops_the_run_and_the_line_stays_as_it_was(
        replayed: tuple[Path, dict[str, str]]) -> None:
    project, env = replayed
    stalled = dict(env, REPLAY=str(next(p for p in FAILURES if kind_of(p) == "streaming")),
                   STALL_AFTER="orders_stream is RUNNING")
    started = time.monotonic()
    done = sdp_expect_on_terminal("run", "--port-wait", "0", cwd=project, env=stalled,
                                  interrupt_after="orders_stream is RUNNING", timeout=60)
    assert time.monotonic() - started < 30  # the child sleeps 600 s: it was stopped
    assert done.returncode == 130  # EXIT_INTERRUPTED
    shown = screen(done.stdout)
    running = next(i for i, line in enumerate(shown) if "orders_stream is RUNNING" in line)
    assert re.fullmatch(r"\[00:0\d\] 0/3 flows done · failed: 0 · running: orders_stream",
                        shown[running + 1]), shown
    assert shown[-1] == shown[running + 1]  # left as the last line
    assert done.stdout.endswith("\r\n")  # finished: the timer drew nothing after it
    assert done.stderr.rstrip().endswith("sdp-expect: interrupted")


def test_highlight_colours_a_flow_skipped_for_an_upstream_failure() -> None:
    """SDP 4.x says ``Flow '<name>' SKIPPED due to upstream failure(s).``, without "is"."""
    line = ("2026-11-30 11:05:19: Flow 'spark_catalog.default.orders_stream_dq_metrics' "
            "SKIPPED due to upstream failure(s).\n")
    assert highlight(line, False) == line
    coloured = highlight(line, True)
    assert coloured != line and coloured.endswith("\n")
    assert coloured.startswith("\x1b[") and line.strip() in coloured
