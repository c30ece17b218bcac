"""The ktui command line.

Every command imports what it needs lazily: `ktui repro` must run on a machine that has
rich and click but not Textual or orjson, and only `replay` / `compare` / `runs` (interactive)
load Textual.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

BUNDLED_TRACE = "popcorn_l1_p27_grok-4.3.jsonl"


def bundled_trace() -> Path:
    """The seed trace, packaged under ktui/data (``traces/`` in a checkout links to it)."""
    cand = Path(__file__).resolve().parent / "data" / BUNDLED_TRACE
    if not cand.is_file():
        fail(f"bundled trace {BUNDLED_TRACE} not found (a broken install: ktui/data is missing)")
    return cand


def fail(msg: str, code: int = 2) -> None:
    """One clear line on stderr, no traceback."""
    click.echo(f"ktui: {msg}", err=True)
    sys.exit(code)


def _shown(path: str) -> str:
    from ktui.view.text import one_line

    return one_line(path)


def check_trace_path(path: str) -> Path:
    """The path of a trace every command can read, or one line on stderr and exit 2: missing,
    a directory, not a regular file (FIFO, device), unreadable, or not a trace at all (the same
    line ``show`` prints)."""
    import os
    import stat

    from ktui.trace.address import split

    p = Path(path)
    try:
        st = os.stat(split(path).path)  # PATH#KEY: a run inside the file PATH
    except FileNotFoundError:
        fail(f"{_shown(path)}: no such file")
    except OSError as exc:
        fail(f"{_shown(path)}: cannot read: {exc.strerror or exc}")
    if stat.S_ISDIR(st.st_mode):
        fail(f"{_shown(path)}: is a directory (use `ktui runs {_shown(path)}` or `ktui validate {_shown(path)}`)")
    from ktui.trace.facts import not_a_trace
    from ktui.trace.reader import sniff

    why = not_a_trace(sniff(p))
    if why:
        fail(f"{_shown(path)}: {_shown(why)}")
    return p


def _interactive() -> bool:
    """The full-screen app only on a terminal (or under a Textual driver such as textual-serve's
    web driver): piped, the commands print instead."""
    import os

    if os.environ.get("TEXTUAL_DRIVER"):
        return True
    return sys.stdout.isatty() and sys.stdin.isatty()


class _DefaultReplayGroup(click.Group):
    """`ktui TRACE` is a shortcut for `ktui replay TRACE`."""

    def resolve_command(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            import difflib
            import os

            near = difflib.get_close_matches(args[0], list(self.commands), n=3, cutoff=0.6)
            if not os.path.lexists(args[0]):
                if near:  # a typo of a command, not a file
                    return super().resolve_command(ctx, args)  # click: "No such command ... Did you mean ..."
                fail(f"{_shown(args[0])}: neither a command nor a file (commands: {', '.join(sorted(self.commands))}; "
                     "`ktui --help` says more)")
            args = ["replay", *args]
        return super().resolve_command(ctx, args)


@click.group(cls=_DefaultReplayGroup, invoke_without_command=True)
@click.version_option(package_name="ktui")
@click.option("--format", "trace_format", metavar="NAME", default=None,
              help="Read traces as this format instead of detecting it (ensemble, claude-code, codex-cli, "
                   "inspect, harbor-atif, mini-swe-agent, swe-agent, openhands, kernelagent, chat-messages).")
@click.pass_context
def main(ctx: click.Context, trace_format: str | None) -> None:
    """Read, diff, compare and re-execute LLM GPU-kernel agent traces.

    With no command, opens the bundled seed trace in the replay app. Traces of Claude Code, Codex
    CLI, Inspect AI, Harbor (ATIF), mini-swe-agent, OpenHands, KernelAgent and chat-message logs
    are read too.
    """
    if trace_format:
        import os

        from ktui.trace.importers import ENV, names

        if trace_format not in names():
            fail(f"--format {trace_format}: unknown format (known: {', '.join(names())})")
        os.environ[ENV] = trace_format  # helper processes (the sweep scan) inherit it
    if ctx.invoked_subcommand is None:
        ctx.invoke(replay, trace=None, follow=False)


@main.command()
@click.argument("trace", type=click.Path(dir_okay=True), required=False)
@click.option("--turn", "turn", type=int, default=None, help="Show only this turn (0-based).")
@click.option("--json", "as_json", is_flag=True, help="Print the normalized model as JSON.")
@click.option("--full", is_flag=True, help="Do not shorten long tool outputs.")
def show(trace: str | None, turn: int | None, as_json: bool, full: bool) -> None:
    """Print a run like its web page: header, metrics, turns, kernel versions."""
    from ktui.report.show import show_command

    path = check_trace_path(trace) if trace else bundled_trace()
    sys.exit(show_command(path, turn=turn, as_json=as_json, full=full))


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report.")
def validate(paths: tuple[str, ...], as_json: bool) -> None:
    """Check traces (files or directories): variant, counts, problems with line numbers.

    Exit status 1 when any file has problems.
    """
    from ktui.report.validate import validate_command

    sys.exit(validate_command(list(paths), as_json=as_json))


@main.command()
@click.argument("trace", type=click.Path(), required=False)
@click.option("--follow", "-f", is_flag=True, help="Follow a trace that is still being written.")
def replay(trace: str | None, follow: bool) -> None:
    """Step through a run turn by turn (the interactive app; ``show`` when not on a terminal)."""
    path = check_trace_path(trace) if trace else bundled_trace()
    if not _interactive():
        from ktui.report.show import show_command

        sys.exit(show_command(path))
    from ktui.tui.app import run_replay

    sys.exit(run_replay(path, follow=follow))


@main.command()
@click.argument("trace", type=click.Path())
@click.argument("version_a", required=False)
@click.argument("version_b", required=False)
@click.option("--split", is_flag=True, help="Side by side instead of unified.")
@click.option("--context", "-U", type=int, default=3, show_default=True, help="Context lines.")
def diff(trace: str, version_a: str | None, version_b: str | None, split: bool, context: int) -> None:
    """Diff kernel versions (default: every successive pair)."""
    from ktui.report.diff import diff_command

    path = check_trace_path(trace)
    sys.exit(diff_command(path, version_a, version_b, split=split, context=context))


@main.command()
@click.argument("trace", type=click.Path())
@click.option("--turn", type=int, default=None, help="The kernel used at this turn.")
@click.option("--version", "version", default=None, help="Kernel version (vK) or sha1 prefix.")
@click.option("--final", is_flag=True, help="The final submitted kernel (default).")
@click.option("--all", "all_", is_flag=True, help="Every kernel version.")
@click.option("--reference", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Reference source file (replaces the trace's own).")
@click.option("--tasks", type=click.Path(exists=True, file_okay=False), default=None,
              help="Task folders (Harbor tasks, a KernelBench checkout): the reference of the run's task when "
                   "neither the trace nor its prompt holds one, and the task's correctness rule (its config.json).")
@click.option("--device", default=None, help="cuda, cuda:N or cpu (default: cuda if available).")
@click.option("--trials", type=int, default=100, show_default=True, help="Timed trials.")
@click.option("--method", type=click.Choice(["cuda_event", "do_bench", "cuda_graph", "host"]),
              default="cuda_event", show_default=True)
@click.option("--timeout", type=float, default=600.0, show_default=True, help="Seconds per run stage.")
@click.option("--compile-timeout", type=float, default=None,
              help="Seconds for the build stage (default: --timeout).")
@click.option("--fresh", is_flag=True, help="Ignore cached results.")
@click.option("--input-seed", type=int, default=None,
              help="Judge on the inputs of an earlier run (its result's seeds.inputs; implies --fresh). "
                   "Default: a new secret seed each run.")
@click.option("--json", "as_json", is_flag=True, help="JSON result on stdout.")
@click.option("--brief", is_flag=True, help="One line per version: verdict, result here, classes, reason.")
@click.option("--profile", is_flag=True,
              help="Re-measure the page's hardware counters (SOL, roofline, warp stalls) with Nsight Compute.")
@click.option("--clock-control", type=click.Choice(["none", "base"]), default="none", show_default=True,
              help="With --profile: ncu's GPU clock control.")
def repro(trace, turn, version, final, all_, reference, tasks, device, trials, method, timeout, compile_timeout,
          fresh, input_seed, as_json, brief, profile, clock_control):
    """Re-execute a kernel snapshot and compare with what the trace recorded."""
    from ktui.report.repro import repro_command

    path = check_trace_path(trace)
    if profile:
        from ktui.report.profile import profile_command

        if all_:
            raise click.UsageError("--profile takes one version (--version, --turn or --final), not --all")
        sys.exit(profile_command(path, turn=turn, version=version, final=final, reference=reference, device=device,
                                 timeout=timeout, compile_timeout=compile_timeout, clock_control=clock_control,
                                 as_json=as_json))
    sys.exit(repro_command(path, turn=turn, version=version, final=final, all_=all_,
                           reference=reference, device=device, trials=trials, method=method,
                           timeout=timeout, compile_timeout=compile_timeout, fresh=fresh, as_json=as_json,
                           input_seed=input_seed, tasks=tasks, brief=brief))


@main.command()
@click.argument("trace", type=click.Path())
@click.option("--version", "version", default="final", show_default=True, help="Kernel version (vK).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True)
@click.option("--reference", type=click.Path(exists=True, dir_okay=False), default=None)
@click.option("--force", is_flag=True, help="Overwrite OUTPUT if it exists.")
def export(trace, version, output, reference, force):
    """Write a standalone script that reproduces a kernel's measurement anywhere."""
    import os

    from ktui.report.export import export_command

    path = check_trace_path(trace)
    if os.path.lexists(output) and not force:
        fail(f"{_shown(output)}: exists (use --force to overwrite)")
    sys.exit(export_command(path, version=version, output=output, reference=reference))


@main.command()
@click.argument("traces", nargs=-1, required=True, type=click.Path())
@click.option("--print", "print_", is_flag=True, help="Print the summary and final-kernel diff.")
def compare(traces: tuple[str, ...], print_: bool) -> None:
    """Compare two or more runs side by side."""
    if len(traces) < 2:
        fail("compare needs at least two traces")
    paths = [check_trace_path(t) for t in traces]
    if print_ or not _interactive():
        from ktui.report.compare import compare_print

        sys.exit(compare_print(paths))
    from ktui.tui.app import run_compare

    sys.exit(run_compare(paths))


@main.command()
@click.argument("directory", type=click.Path())
@click.option("--print", "print_", is_flag=True, help="Print the table instead of opening the app.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default=None)
@click.option("--no-cache", is_flag=True, help="Do not read or write the index cache.")
@click.option("--label", "label_names", multiple=True, metavar="LABEL",
              help="Only runs with this label (on the run, a turn or a version; repeatable: any of them).")
@click.option("--labels", "labels_file", type=click.Path(dir_okay=False), default=None,
              help="Another labels file to read (besides the default one and DIR/ktui-labels.jsonl).")
@click.option("--exclude", "exclude", multiple=True, metavar="WHAT",
              help="Leave runs out of the aggregates and charts: hacks, flags, labelled, hack:CLASS, flag:CODE, "
                   "label:NAME (comma-separated or repeated). The count left out is always shown.")
def runs(directory: str, print_: bool, fmt: str | None, no_cache: bool, label_names: tuple[str, ...],
         labels_file: str | None, exclude: tuple[str, ...]) -> None:
    """Browse a sweep directory: every run, per-model aggregates."""
    import os

    from ktui.trace.aggregate import parse_exclude

    p = Path(directory)
    if not os.path.lexists(p):
        fail(f"{_shown(directory)}: no such directory")
    try:
        excl = parse_exclude(exclude)
    except ValueError as exc:
        fail(str(exc))
    if print_ or fmt or not _interactive():
        from ktui.report.runs import runs_print

        sys.exit(runs_print(p, fmt=fmt or "table", use_cache=not no_cache, labels=label_names, exclude=excl,
                            labels_file=labels_file))
    from ktui.tui.app import run_runs

    sys.exit(run_runs(p, use_cache=not no_cache, labels=label_names, exclude=excl, labels_file=labels_file))


@main.command()
@click.argument("path", type=click.Path())
@click.argument("pattern")
@click.option("--regex", "-e", is_flag=True, help="PATTERN is a Python regular expression (default: literal text).")
@click.option("--in", "fields", metavar="FIELDS", default=None,
              help="Comma-separated fields to search: reasoning,text,calls,results,kernels (default: all).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object a hit (JSON Lines).")
@click.option("--case-sensitive", "-s", "case", flag_value=True, default=None,
              help="Match case (default: smart case, sensitive only when PATTERN has an upper-case letter).")
@click.option("--ignore-case", "-i", "case", flag_value=False, help="Ignore case.")
@click.option("--max-per-run", type=click.IntRange(1), default=50, show_default=True, help="Hits shown per run.")
@click.option("--no-cache", is_flag=True, help="Do not use the runs index cache.")
def search(path: str, pattern: str, regex: bool, fields: str | None, as_json: bool, case: bool | None,
           max_per_run: int, no_cache: bool) -> None:
    """Search every transcript, tool call, result and kernel of a trace or a sweep directory.

    One line a hit: run, turn, field, excerpt. Exit 0 when something matched, 1 when nothing did.
    """
    import os

    if not os.path.lexists(path):
        fail(f"{_shown(path)}: no such file or directory")
    if os.path.isfile(path):
        check_trace_path(path)
    from ktui.report.search import search_command

    sys.exit(search_command(path, pattern, regex=regex, fields=fields, as_json=as_json, case_sensitive=case,
                            max_per_run=max_per_run, use_index=not no_cache))


@main.command()
@click.argument("trace", type=click.Path())
@click.argument("label", required=False)
@click.option("--version", "version", default=None, help="Label this kernel version (vK, or final).")
@click.option("--turn", type=int, default=None, help="Label this turn (0-based).")
@click.option("--note", default=None, help="A note kept with the label.")
@click.option("--remove", is_flag=True, help="Remove the label instead.")
@click.option("--labels", "labels_file", type=click.Path(dir_okay=False), default=None,
              help="The labels file (default: $XDG_DATA_HOME/ktui/labels.jsonl; DIR/ktui-labels.jsonl beside a sweep "
                   "is read by every command on DIR).")
def label(trace: str, label: str | None, version: str | None, turn: int | None, note: str | None, remove: bool,
          labels_file: str | None) -> None:
    """Label (and note) a run, a turn or a kernel version, outside the trace; no LABEL lists them."""
    from ktui.report.labels import label_command

    path = check_trace_path(trace)
    if label is None and (note or remove or version or turn is not None):
        fail("give a LABEL")
    sys.exit(label_command(path, label, version=version, turn=turn, note=note, remove=remove,
                           labels_file=labels_file))


@main.group()
def labels() -> None:
    """Labelled runs, turns and kernel versions (see `ktui label`)."""


@labels.command("export")
@click.argument("directory", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["csv", "jsonl"]), default="jsonl", show_default=True)
@click.option("-o", "--output", type=click.Path(), default=None,
              help="Write here (a directory: labels.csv / labels.jsonl inside it) instead of stdout.")
@click.option("--labels", "labels_file", type=click.Path(dir_okay=False), default=None,
              help="Another labels file to read.")
@click.option("--no-code", is_flag=True, help="jsonl: leave out the labelled kernel code.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the index cache.")
def labels_export(directory: str, fmt: str, output: str | None, labels_file: str | None, no_code: bool,
                  no_cache: bool) -> None:
    """Every label on a run of the sweep DIR, one row each: a labelled dataset (jsonl: with the code)."""
    import os

    from ktui.report.labels import export_command

    if not os.path.isdir(directory):
        fail(f"{_shown(directory)}: not a directory")
    if output and os.path.isdir(output):
        output = os.path.join(output, f"labels.{fmt}")
    sys.exit(export_command(Path(directory), fmt, labels_file=labels_file, output=output,
                            use_cache=not no_cache, with_code=not no_code))


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--final", "final", is_flag=True, help="Each run's final kernel (default).")
@click.option("--all-versions", is_flag=True, help="Every kernel version of every run.")
@click.option("--gpus", default=None, help="GPUs to time on, e.g. 0,1 (default: every visible GPU).")
@click.option("--jobs", "-j", type=int, default=None, help="Parallel builds (default: the cores the judges leave, two compilers a build).")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True)
@click.option("--address", default=None, help="Ray cluster address (default: a local Ray instance).")
@click.option("--json", "as_json", is_flag=True, help="The report as JSON on stdout.")
@click.option("--csv", "as_csv", is_flag=True, help="One CSV row per run on stdout.")
@click.option("--fresh", is_flag=True, help="Ignore cached results (re-run everything).")
@click.option("--device", default=None, help="cuda or cpu (default: cuda if a GPU is visible).")
@click.option("--timeout", type=float, default=600.0, show_default=True, help="Seconds per run stage.")
@click.option("--compile-timeout", type=float, default=None, help="Seconds for a build (default: --timeout).")
@click.option("--method", type=click.Choice(["cuda_event", "do_bench", "cuda_graph", "host"]),
              default="cuda_event", show_default=True)
@click.option("--trials", type=int, default=100, show_default=True, help="Timed trials.")
@click.option("--build-cache", type=click.Path(file_okay=False), default=None,
              help="Build cache directory (shared storage for a Ray cluster).")
@click.option("--cpu-slots", type=int, default=1, show_default=True, help="CPU timing workers (--device cpu).")
@click.option("--reference", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Reference source for runs whose trace has none.")
@click.option("--tasks", type=click.Path(exists=True, file_okay=False), default=None,
              help="Task folders (Harbor tasks, a KernelBench checkout): each run's reference and correctness "
                   "rule by its task.")
@click.option("--events", "events_out", type=click.Path(dir_okay=False), default=None,
              help="Write the engine's timeline (builds, timings, per slot) as JSON here (benchmarks).")
@click.option("--pipeline/--no-pipeline", default=True, show_default=True,
              help="Two judges per GPU (or CPU slot): the next kernel's workers get ready while one is timed "
                   "(the timing windows have the device alone).")
def verify(paths, final, all_versions, gpus, jobs, engine, address, as_json, as_csv, fresh, device, timeout,
           compile_timeout, method, trials, build_cache, cpu_slots, reference, tasks, events_out, pipeline):
    """Re-execute every run's kernel of a sweep (DIR or TRACE files): which recorded claims hold."""
    from ktui.report.verify import verify_command

    if final and all_versions:
        fail("choose one of --final, --all-versions")
    if as_json and as_csv:
        fail("choose one of --json, --csv")
    sys.exit(verify_command(list(paths), all_versions=all_versions, gpus=gpus, jobs=jobs, engine=engine,
                            address=address, fmt="json" if as_json else ("csv" if as_csv else "table"),
                            fresh=fresh, device=device, timeout=timeout, compile_timeout=compile_timeout,
                            method=method, trials=trials, build_cache=build_cache, cpu_slots=cpu_slots,
                            reference=reference, events_out=events_out, tasks=tasks, pipeline=pipeline))


@main.command()
@click.argument("directory", type=click.Path())
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="report.html", show_default=True)
@click.option("--no-cache", is_flag=True, help="Do not read or write the index cache.")
@click.option("--jobs", type=int, default=None, help="Processes that build the runs' details.")
@click.option("--exclude", "exclude", multiple=True, metavar="WHAT",
              help="Leave runs out of the aggregates and charts (as `ktui runs --exclude`); the count is shown.")
@click.option("--labels", "labels_file", type=click.Path(dir_okay=False), default=None,
              help="Another labels file to read (besides the default one and DIR/ktui-labels.jsonl).")
@click.option("--verify", "verify_file", type=click.Path(dir_okay=False), default=None,
              help="A `ktui verify --json` report to show in its own section (recorded vs reproduced).")
def report(directory: str, output: str, no_cache: bool, jobs: int | None, exclude: tuple[str, ...],
           labels_file: str | None, verify_file: str | None) -> None:
    """Write one self-contained HTML file about a sweep: charts, runs, each run's transcript and diffs."""
    from ktui.trace.aggregate import parse_exclude

    p = Path(directory)
    if not p.exists():
        fail(f"{directory}: no such file or directory")
    try:
        excl = parse_exclude(exclude)
    except ValueError as exc:
        fail(str(exc))
    from ktui.report.html import report_command

    sys.exit(report_command(p, output, use_cache=not no_cache, jobs=jobs, exclude=excl, labels_file=labels_file,
                            verify_file=verify_file))


@main.command()
@click.argument("target", required=False, type=click.Path())
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=int, default=8000, show_default=True)
@click.option("--allow-remote", is_flag=True,
              help="Listen on a non-loopback address (anyone who reaches it can re-execute trace code).")
def serve(target: str | None, host: str, port: int, allow_remote: bool) -> None:
    """The app in a browser (textual-serve): `replay TRACE`, `runs DIR`, or the bundled trace."""
    from ktui.tui.serve import app_command, is_loopback
    from ktui.tui.serve import serve as run_server

    p = Path(target) if target else None
    if p is not None and not p.exists():
        fail(f"{target}: no such file or directory")
    if p is not None and p.is_file():
        check_trace_path(target)
    if not is_loopback(host):
        if not allow_remote:
            fail(f"--host {host} is not a loopback address: the served app can re-execute trace code, so "
                 "anyone who can reach it could run code on this machine. Add --allow-remote to do it anyway.")
        click.echo(f"ktui: WARNING: serving on {host}:{port}, reachable from other machines; anyone who "
                   "connects can re-execute trace code here.", err=True)
    if not 0 < port < 65536:
        fail(f"--port {port}: not a TCP port")
    try:
        import textual_serve  # noqa: F401
    except ImportError:
        fail("ktui serve needs textual-serve: pip install 'ktui[serve]'")
    command = app_command(p, bundled=bundled_trace())
    click.echo(f"ktui: serving `{command}` on http://{host}:{port} (ctrl+c stops)", err=True)
    run_server(command, host, port)


if __name__ == "__main__":
    main()
