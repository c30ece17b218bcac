"""The sweep index: find every trace under a directory and summarise each one quickly.

``ktui runs DIR`` must show 10,000 traces (1 GB) progressively, so runs are summarised by a
background scan that keeps no turns, events or kernels in memory:

- :mod:`~ktui.trace.index.walk`: every trace file once, in a stable order (links, loops,
  duplicates, unreadable directories), reading the sweep's record files on the way
  (:mod:`~ktui.trace.index.records`);
- :mod:`~ktui.trace.index.skim`: one file into its row (:class:`RunSummary`), by the reader's
  own rules, keeping nothing of the file;
- :mod:`~ktui.trace.index.workers`: helper processes that skim in parallel (:func:`default_jobs`);
- :mod:`~ktui.trace.index.cache`: rows cached per file, keyed by real path, size and mtime, in
  ``$KTUI_CACHE_DIR`` (default ``$XDG_CACHE_HOME/ktui`` or ``~/.cache/ktui``), never beside the traces;
- :class:`SweepIndex` (here): the scan that puts them together and yields rows in the walk's
  order as soon as each is known, so the first rows show while the rest are read.

Nothing here raises on bad input: unreadable files and directories, broken lines and empty trees
become :class:`ScanIssue` entries. No Textual, no torch.
"""

from __future__ import annotations

import itertools
import os
import selectors
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

from ktui.trace.address import join as join_address
from ktui.trace.index.cache import SCHEMA, cache_dir, cache_path, inherited, load_cache, save_cache
from ktui.trace.index.records import RECORD_FILES, Records, outcome_from_scores
from ktui.trace.index.skim import CHUNK, _progress, summarize, summarize_loaded, summary_of_run
from ktui.trace.index.summary import RunSummary, ScanIssue, TraceFile, problem_key
from ktui.trace.index.walk import TRACE_EXTS, discover, iter_traces, willneed
from ktui.trace.index.workers import Helper, default_jobs, fork_ok, worker_main
from ktui.trace.labels import LabelStore, files_for
from ktui.trace.words import count, plural

__all__ = [
    "CHUNK", "RECORD_FILES", "SCHEMA", "TRACE_EXTS", "Records", "RunSummary", "ScanIssue", "SweepIndex", "TraceFile",
    "_progress", "cache_dir", "cache_path", "default_jobs", "discover", "iter_traces", "load_cache",
    "outcome_from_scores", "problem_key", "save_cache", "scan", "summarize", "summarize_loaded", "summary_of_run", "worker_main",
]


class _Scan:
    """The state of one pass of :meth:`SweepIndex.summaries`: results are computed out of order
    (cache, helpers, this process) and handed out in the walk's order."""

    PREFETCH_AHEAD = 4  # files this process asks the kernel to read ahead of its own skims
    FIRST_ROWS = 8  # files handed out one by one as the walk finds them (the first screen's rows)

    def __init__(self, idx: SweepIndex, given: Mapping[str, RunSummary] | None = None) -> None:
        self.idx = idx
        self.given = given or {}
        self.cpath = cache_path(idx.root)
        self.cached = load_cache(self.cpath) if idx.use_cache else {}
        if idx.use_cache and not self.cached and not os.path.exists(self.cpath):
            self.cached = inherited(idx.root)  # a first scan of a directory inside one scanned before
        self.fresh: dict[str, dict[str, Any]] = {}
        self.seen_fp: dict[str, str] = {}
        if idx.total is not None:
            self.walk: Iterator[TraceFile] = iter(idx.files)
        else:
            self.walk = iter_traces(idx.root, idx.issues, idx.records)
            idx.files = []
        self.ready: dict[int, RunSummary] = {}  # results waiting for their turn
        self.raw: dict[int, dict[str, Any]] = {}  # each ready row before the sweep's records: what the cache keeps
        self.todo: deque[int] = deque()  # indices to skim, in order
        self.helpers: list[Helper] = []
        self.sel = selectors.DefaultSelector()
        self.next_out = 0
        self.n_found = 0
        self.uncached = 0
        self.hit_rows: set[int] = set()  # ready rows served from the cache
        self.new_rows = 0  # rows handed out that the cache did not have
        self.walking = True
        self.prefetched: set[int] = set()  # files asked to be read ahead (:meth:`prefetch`)

    # ---- 1. walking, and what the cache has ----------------------------------------------------------
    def walk_burst(self) -> None:
        """Walk a little further (in bursts, so that helpers get work early)."""
        idx = self.idx
        for _ in range(idx.WALK_BURST):
            tf = next(self.walk, None)
            if tf is None:
                self.walking = False
                idx.total = self.n_found
                return
            i = self.n_found
            self.n_found += 1
            if len(idx.files) < self.n_found:
                idx.files.append(tf)
            s = self.given.get(tf.real)
            if s is not None:  # summarised by the caller already (``ktui report``: from the run it loads)
                self.finish(i, s)
                continue
            if self.from_cache(i, tf):
                continue
            self.todo.append(i)
            self.uncached += 1
            if idx.jobs and not self.helpers and self.uncached >= idx.PARALLEL_MIN:
                self.start_helpers()
            if self.next_out == i and not self.ready and i < self.FIRST_ROWS:
                return  # the very first rows: do not make them wait for a burst (after them the
                # walk keeps ahead of the skim, so that the next files can be read ahead)

    def from_cache(self, i: int, tf: TraceFile) -> bool:
        ent = self.cached.get(tf.real)
        if not ent or ent.get("size") != tf.size or ent.get("mtime_ns") != tf.mtime_ns:
            return False
        try:
            s = RunSummary.from_dict(ent)
        except TypeError:
            return False
        self.finish(i, s, ent)  # the records are applied at every read: they change apart from the trace
        self.hit_rows.add(i)
        self.idx.cache_hits += 1
        return True

    # ---- 2. skimming: helpers and this process --------------------------------------------------------
    def finish(self, i: int, s: RunSummary, raw: dict[str, Any] | None = None) -> None:
        """A file's row is known: the sweep's records are applied to it (``raw``: the row before them,
        as the cache holds it; the row's own dict when not given)."""
        tf = self.idx.files[i]
        self.raw[i] = s.to_dict() if raw is None else raw
        recs = self.idx.records.lookup(tf)
        s.path, s.record_sig = tf.path, self.idx.records.signature(recs)
        if recs:
            self.idx.records.apply(s, recs)
        self.ready[i] = s

    def start_helpers(self) -> None:
        idx = self.idx
        forked = idx.fork if idx.fork is not None else fork_ok()
        for _ in range(idx.jobs - len(self.helpers)):
            try:
                h = Helper(forked, [fd for o in self.helpers for fd in o.fds()] if forked else None)
            except OSError:
                idx.jobs = len(self.helpers)
                return
            self.helpers.append(h)
            self.sel.register(h.fileno(), selectors.EVENT_READ, h)
        idx.helpers_forked = forked
        idx.helpers_used = len(self.helpers)

    def feed_helpers(self) -> None:
        for h in self.helpers:
            while h.alive and self.todo and len(h.outstanding) < h.MAX_OUTSTANDING:
                i = self.todo.popleft()
                if not h.give(i, self.idx.files[i]):
                    self.todo.appendleft(i)
                    break
                self.prefetch(i)  # read while the helper works through the ones before it

    def prefetch(self, i: int) -> None:
        """Ask the kernel to read file ``i`` ahead (a cold sweep waits on the disk file after file
        otherwise); once per file, best effort."""
        if i not in self.prefetched:
            self.prefetched.add(i)
            tf = self.idx.files[i]
            willneed(tf.real or tf.path)

    def prefetch_far_end(self) -> None:
        """The files this process skims from the far end of the queue, a few ahead."""
        for i in list(itertools.islice(reversed(self.todo), self.PREFETCH_AHEAD)):
            self.prefetch(i)

    def collect(self, timeout: float) -> None:
        if not self.helpers:
            return
        for key, _ in self.sel.select(timeout):
            h: Helper = key.data
            for i, s in h.read():
                self.finish(i, s if s is not None else summarize(self.idx.files[i]))
            if not h.alive:  # it died: its tasks come back to us
                self.sel.unregister(h.fileno())
                self.todo.extendleft(sorted(h.outstanding, reverse=True))
                h.outstanding.clear()

    def skim_here(self) -> None:
        """The next row in order: skim it here if nobody has it; else wait for a helper, or skim
        from the far end meanwhile."""
        nxt = self.next_out
        if nxt in self.ready:
            return
        if self.todo and self.todo[0] == nxt:
            self.todo.popleft()
            for j in itertools.islice(self.todo, self.PREFETCH_AHEAD):  # this process's next ones, unless a helper takes them
                self.prefetch(j)
            self.finish(nxt, summarize(self.idx.files[nxt]))
        elif not self.walking and not self.todo:
            if nxt < self.n_found:
                self.collect(0.05)  # a helper has it
        elif not self.walking:
            i = self.todo.pop()
            self.prefetch_far_end()
            self.finish(i, summarize(self.idx.files[i]))

    # ---- 3. handing rows out, in order ----------------------------------------------------------------
    def ready_rows(self) -> Iterator[RunSummary]:
        idx = self.idx
        while self.next_out in self.ready:
            i = self.next_out
            s = self.ready.pop(i)
            tf = idx.files[i]
            self.next_out += 1
            self.fresh[tf.real] = self.raw.pop(i)
            if i in self.hit_rows:
                self.hit_rows.discard(i)
            else:
                self.new_rows += 1
            idx.done += 1
            if s.parts:  # a file of many runs: each is a row, addressed path#key
                for ps in self.parts_of(s, tf):
                    if self.admit(ps, tf):
                        yield ps
            elif self.admit(s, tf):
                yield s

    def parts_of(self, s: RunSummary, tf: TraceFile) -> Iterator[RunSummary]:
        recs = self.idx.records.lookup(tf)
        for d in s.parts:
            try:
                ps = RunSummary.from_dict(d)
            except TypeError:
                continue
            ps.path, ps.real = join_address(tf.path, ps.key), join_address(tf.real, ps.key)
            if recs:
                self.idx.records.apply(ps, recs)
            yield ps

    def admit(self, s: RunSummary, tf: TraceFile) -> bool:
        """Whether a row is a run to list (and the issue it raises when it is not, or has problems)."""
        idx = self.idx
        if s.format == "none":  # a .json file that is not a trace: not a run
            idx.not_traces += 1
            return False
        if s.format == "result":  # a harness's result file: read with its run's trace
            idx.result_files += 1
            return False
        if s.fingerprint and s.fingerprint in self.seen_fp:
            idx.duplicates += 1
            idx.issues.append(ScanIssue(tf.path, f"same content as {self.seen_fp[s.fingerprint]}; listed once", "info"))
            return False
        if s.fingerprint:
            self.seen_fp[s.fingerprint] = tf.path
        if s.not_trace:  # not a trace (an empty file, a binary): one line, not counted
            idx.issues.append(ScanIssue(tf.path, s.not_trace, "error"))
            return False
        s.labels = [lab.short for lab in idx.labels.for_id(s.content_id)] if idx.labels else []
        if s.problems:
            sev = "error" if "unreadable" in s.flags or s.problems[0].startswith("empty") else "warning"
            more = f" (+{len(s.problems) - 1} more)" if len(s.problems) > 1 else ""
            idx.issues.append(ScanIssue(tf.path, s.problems[0] + more, sev))
        return True

    @property
    def over(self) -> bool:
        return not self.walking and self.next_out >= self.n_found

    # ---- the end ----------------------------------------------------------------------------------------
    def close(self) -> None:
        idx = self.idx
        for h in self.helpers:
            h.close()
        self.sel.close()
        unchanged = idx.cache_hits == len(self.fresh) == len(self.cached) and idx.total is not None
        if self.walking and not self.new_rows:
            unchanged = True  # stopped early (the app quit) with nothing new: the cache stays as it is
        if idx.use_cache and self.fresh and not unchanged:
            # keep still-valid entries of files this (possibly interrupted) scan did not reach; a
            # file is known gone only once the walk is over (stopped during the walk: keep them all)
            live = {tf.real for tf in idx.files} if not self.walking else self.cached.keys()
            merged = {k: v for k, v in self.cached.items() if k in live and k not in self.fresh}
            merged.update(self.fresh)
            err = save_cache(self.cpath, idx.root, merged)
            if err:
                idx.issues.append(ScanIssue(idx.root, err, "info"))


class SweepIndex:
    """Scan a directory tree of traces. Iterate :meth:`summaries` for progressive results.

    Summaries come in the walk's order. Cached summaries cost nothing; the others are skimmed
    here and, when there are many, by ``jobs`` helper processes as well (:func:`default_jobs`).
    ``total`` is the number of trace files once the walk is over (None before); ``issues``
    collects what was wrong with the tree; ``cache_hits`` counts summaries served from the cache.
    """

    PARALLEL_MIN = 48  # uncached files before helpers are started
    WALK_BURST = 64  # files found between two rounds of skimming

    def __init__(self, root: str | os.PathLike[str], *, use_cache: bool = True, jobs: int | None = None,
                 labels: LabelStore | None = None) -> None:
        self.root = os.fspath(root)
        # the user's labels (the default file, the sweep's own, or the ones given): read at every scan
        self.labels = labels if labels is not None else LabelStore.read(files_for(self.root))
        self.use_cache = use_cache
        self.jobs = default_jobs() if jobs is None else jobs
        self.issues: list[ScanIssue] = []
        self.records = Records()
        self.files: list[TraceFile] = []
        self.total: int | None = None
        self.cache_hits = 0
        self.done = 0
        self.duplicates = 0
        self.not_traces = 0  # .json files skipped: not traces
        self.result_files = 0  # .json files that are a harness's result files (read with their runs)
        self.helpers_used = 0
        self.helpers_forked = False  # the helpers were forked from this process (workers.Helper(fork=True))
        self.fork: bool | None = None  # None: fork where it is safe (workers.fork_ok); False: never

    def discover(self) -> list[TraceFile]:
        """The whole walk at once (the scan itself does not wait for it)."""
        if self.total is None:
            self.files = discover(self.root, self.issues, self.records)
            self.total = len(self.files)
        return self.files

    def summaries(self, given: Mapping[str, RunSummary] | None = None) -> Iterator[RunSummary]:
        """Every run, in the walk's order, as soon as it is known. ``given``: rows the caller has
        already (by real path, e.g. :func:`summarize_loaded`'s), used instead of a skim or the cache."""
        sc = _Scan(self, given)
        try:
            while True:
                if sc.walking:
                    sc.walk_burst()
                sc.feed_helpers()
                sc.collect(0)
                sc.skim_here()
                yield from sc.ready_rows()
                if sc.over:
                    break
        finally:
            sc.close()
        self._report()

    def _report(self) -> None:
        for rec in self.records.unmatched():
            status = rec.data.get("status")
            what = f" (status {status})" if isinstance(status, str) else ""
            slug = rec.data.get("slug") or rec.data.get("run_id") or "?"
            self.issues.append(ScanIssue(rec.source, f"record for {slug}{what} has no trace file", "info"))
        if self.not_traces:
            self.issues.append(ScanIssue(self.root, f"{count(self.not_traces, '.json file')} "
                                         f"{plural(self.not_traces, 'is not a trace', 'are not traces')}; skipped", "info"))
        if self.result_files:
            self.issues.append(ScanIssue(self.root, f"{count(self.result_files, 'result file')} of the harness read with "
                                         "their runs", "info"))
        if not self.files or self.not_traces + self.result_files == len(self.files):
            self.issues.append(ScanIssue(self.root, "no trace files (*.jsonl, *.json) found", "warning"))


def scan(root: str | os.PathLike[str], *, use_cache: bool = True, jobs: int | None = None,
         ) -> tuple[list[RunSummary], list[ScanIssue]]:
    """Every run under ``root`` (not progressive), with the tree's issues."""
    idx = SweepIndex(root, use_cache=use_cache, jobs=jobs)
    runs = list(idx.summaries())
    return runs, idx.issues
