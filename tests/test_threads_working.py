"""The threads probe's test for a process working in the background (probes.threads.working): by
its CPU time, or, on a loaded machine where a spinning daemon gets a small share of a core, by its
threads being runnable through the window. Idle processes (asleep, blocked on a pipe) never count."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ktui.engine.probes import threads

SPIN = "import os, sys; os.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True: pass"
SLEEP = "import time\nwhile True: time.sleep(0.01)"
BLOCKED = "import sys; sys.stdin.read()"


def _start(code, *args, stdin=subprocess.DEVNULL):
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdin=stdin)


@pytest.fixture
def procs():
    started = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def test_a_starved_spinner_is_working(procs):
    """Eight spinners share one core: each gets about an eighth of it (25 ms of the 200 ms window,
    under the CPU rule's 50 ms), and is runnable all the while."""
    cpu = min(os.sched_getaffinity(0))
    procs.extend(_start(SPIN, cpu) for _ in range(8))
    import time

    time.sleep(0.5)  # each has pinned itself
    target = procs[0].pid
    busy, _used = threads.working([target])
    assert busy == [target]


def test_idle_processes_are_not_working(procs):
    r, w = os.pipe()
    procs.append(_start(SLEEP))
    procs.append(_start(BLOCKED, stdin=r))
    os.close(r)
    import time

    time.sleep(0.5)
    try:
        busy, used = threads.working([p.pid for p in procs])
        assert busy == [] and used <= threads.IDLE_CPU_S
    finally:
        os.close(w)
