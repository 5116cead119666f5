"""``streamfs bench``: pipeline throughput through Kafka and recovery time."""

from __future__ import annotations

import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from streamfs.bench.pipeline import PHASES, SCENARIOS
from streamfs.cli.errors import UsageProblem
from streamfs.cli.group import _settings
from streamfs.worker.process import REPO


def _machine() -> dict:
    from streamfs.algorithms.parallel import kernel_threads

    return {"cpus": os.cpu_count(), "kernel_threads": kernel_threads(),
            "python": platform.python_version(), "platform": platform.platform()}


def _finite_scale(_ctx: click.Context, _param: click.Parameter, value: float) -> float:
    # nan and inf failed as tracebacks after the warm-up; 0 and -1 ran 10 features silently
    if not (math.isfinite(value) and value > 0):
        raise click.BadParameter(f"must be a finite number above 0, got {value!r}")
    return value


def _json_path(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value == "":  # was ignored without a word: no figures written
        raise click.BadParameter("an empty file name (a variable left unset?)")
    return value


@click.command()
@click.argument("scenarios", nargs=-1, type=click.Choice(sorted(SCENARIOS) + ["recovery"]))
@click.option("--scale", type=float, default=1.0, show_default=True, callback=_finite_scale,
              help="Shrink (or grow) the number of features/instances of each scenario.")
@click.option("--local-broker", is_flag=True,
              help="Start the local Apache Kafka of ops/kafka for the run, and stop it at its "
                   "end; one already running (the same STREAMFS_RUN) is used and left running.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None,
              callback=_json_path,
              help="Also write the figures to this JSON file (after each scenario, so a run "
                   "stopped midway keeps those done).")
@click.option("--warm-up", "warm_up_mb", type=click.IntRange(min=0), default=100,
              show_default=True,
              help="MB pushed through a scratch topic before timing anything, so that the "
                   "broker's JVM is warm (0: none).")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run each scenario this many times, each run in a bench process of its own, "
                   "and report the median of every figure (a ratio: the median of the runs' "
                   "ratios) with each ratio's range. recovery runs once.")
@click.pass_context
def bench(ctx: click.Context, scenarios: tuple[str, ...], scale: float, local_broker: bool,
          json_out: str | None, warm_up_mb: int, repeat: int) -> None:
    """Measure end-to-end throughput (produce -> worker -> selected-features) against the
    in-process algorithm and a plain consumer of the same messages; `recovery` times a restart
    of 10 open streams with 500 kept columns of N = 10,000 each after 1,000 closed streams.
    Default: every scenario and recovery."""
    from rich.console import Console

    from streamfs.bench.pipeline import recovery, run_scenario, warm_up_broker
    from streamfs.bench.summary import median_of_runs
    from streamfs.broker import check_reachable, remember_interrupts

    # `timeout`, a CI's cancel: clean up as for Ctrl-C (the worker stopped, the topics
    # deleted, a broker this run started stopped), where SIGTERM left them behind
    remember_interrupts(signal.SIGTERM)
    settings = _settings(ctx)
    names = list(scenarios) or sorted(SCENARIOS) + ["recovery"]
    results: list[dict] = []
    if json_out:
        _write_json(json_out, results, checking=True)  # now, not after many minutes of runs
    script = REPO / "ops" / "kafka" / "broker.sh"
    started = False
    # a terminal's width; a file or pipe gets lines long enough for the tables
    console = Console() if sys.stdout.isatty() else Console(width=240)
    try:
        if local_broker:
            settings.bootstrap_servers, started = _local_broker(script, console)
        kafka = settings.kafka_config()
        check_reachable(kafka)  # one line and exit 69, not a timeout's traceback minutes later
        if warm_up_mb > 0:
            console.print(f"[bold]warm-up[/bold]: {warm_up_mb} MB through a scratch topic ...")
            results.append(warm_up_broker(kafka, warm_up_mb))
            console.print_json(json.dumps(results[-1]))
        for name in names:
            console.print(f"[bold]bench {name}[/bold] ...")
            if name == "recovery":
                r = recovery(kafka)
            elif repeat == 1:
                r = run_scenario(name, kafka, scale=scale)
            else:
                runs = [_isolated_run(name, scale, settings.bootstrap_servers)
                        for _ in range(repeat)]
                r = {**median_of_runs(runs), "runs": runs}
            results.append(r)
            console.print_json(json.dumps(r, default=str))
            if json_out:
                _write_json(json_out, results)
    finally:
        if started:
            subprocess.run(["bash", str(script), "stop"], capture_output=True)
    for table in summary_tables(results, _machine()["cpus"]):
        console.print(table)


def _local_broker(script: Path, console: Any) -> tuple[str, bool]:
    """The address of the local broker of ``script`` (its ``STREAMFS_RUN``), and whether this
    run started it (only then does the run stop it: it stopped the broker of a user who had
    started one, and every worker on it)."""
    status = subprocess.run(["bash", str(script), "status"], capture_output=True, text=True)
    if status.returncode == 0:
        address = status.stdout.strip().splitlines()[-1]
        console.print(f"using the local broker already running at {address} (left running)")
        return address, False
    out = subprocess.run(["bash", str(script), "start"], capture_output=True, text=True)
    if out.returncode != 0:  # the script's own reason, not CalledProcessError's traceback
        said = [line.removeprefix("[kafka] ") for line in out.stderr.strip().splitlines()]
        reason = said[-1] if said else f"{script} start exited {out.returncode}"
        raise (UsageProblem if out.returncode == 2 else click.ClickException)(
            f"--local-broker: could not start the local broker: {reason}")
    return out.stdout.strip().splitlines()[-1], True


def summary_tables(results: list[dict], cpus: int | None) -> list[Any]:
    """The tables the README and docs/bench-history.md show, from the scenarios' figures:
    seconds and ratios (each with its range over repeated runs), the worker's loop phases,
    and the CPU seconds."""
    from rich.table import Table

    runs = [r for r in results if "scenario" in r]
    if not runs:
        return []

    def table(title: str, columns: tuple[str, ...]) -> Table:
        t = Table(title=title)
        for col in columns:
            t.add_column(col, overflow="fold")
        return t

    def ratio(r: dict, key: str) -> str:
        low_high = r.get("ratio_ranges", {}).get(key)
        return f"{r[key]:.2f}" + (f" ({low_high[0]:.2f}–{low_high[1]:.2f})" if low_high else "")

    main = table("seconds; the ratios are raw consume / backlog, max(raw, in-process) / "
                 "backlog, raw consume / streaming and raw pipeline / streaming (each with its "
                 "range over repeated runs); worker RSS: the streaming worker's peak, then the "
                 "backlog worker's",
                 ("scenario", "MB", "in-process", "raw consume", "backlog", "backlog/raw",
                  "backlog/bound", "streaming", "publish", "raw pipeline", "streaming/raw",
                  "streaming/raw pipeline", "worker RSS MB", "same selection"))
    for r in runs:
        rss = (r.get("worker_peak_rss_mb"), r.get("backlog_worker_peak_rss_mb"))
        main.add_row(r["scenario"], f"{r['megabytes']:g}",
                     *(f"{r[k]:.2f}" for k in ("processor_seconds", "raw_consume_seconds",
                                               "backlog_seconds")),
                     ratio(r, "ratio_backlog_to_raw"), ratio(r, "ratio_backlog_to_bound"),
                     *(f"{r[k]:.2f}" for k in ("pipeline_seconds", "publish_seconds",
                                               "raw_pipeline_seconds")),
                     ratio(r, "ratio_pipeline_to_raw"), ratio(r, "ratio_pipeline_to_raw_pipeline"),
                     ", ".join(f"{v:.0f}" for v in rss if v is not None),
                     "yes" if r["selection_matches_in_process"] else "NO")
    phases = table("where the time goes (seconds, from the worker's /metrics; the streaming "
                   "worker ran before the publish: no rest)",
                   ("scenario", "run", "seconds", *(p.replace("_", " ") for p in PHASES),
                    "other", "commits (helper thread)", "transactions"))
    for r in runs:
        for run, wall in (("backlog", "backlog_seconds"), ("streaming", "pipeline_seconds")):
            if f"{run}_phase_seconds" in r:
                spent = r[f"{run}_phase_seconds"]
                phases.add_row(r["scenario"], run, f"{r[wall]:.3f}",
                               *(f"{spent.get(k, 0.0):.3f}" for k in PHASES),
                               f"{spent['other']:.3f}" if "other" in spent else "–",
                               f"{r[f'{run}_commit_seconds']:.3f}",
                               f"{r[f'{run}_transactions']:g}")
    cpu = table(f"CPU seconds against wall seconds ({cpus} cores; the broker where it is the "
                "local one)",
                ("scenario", "in-process wall", "in-process cpu", "raw consume wall",
                 "raw consumer cpu", "raw broker cpu", "backlog wall", "backlog worker cpu",
                 "backlog broker cpu"))
    for r in runs:
        if "backlog_cpu_seconds" in r:
            raw, back = r["backlog_raw_consume_cpu_seconds"], r["backlog_cpu_seconds"]
            cpu.add_row(r["scenario"], *(f"{v:.3f}" if v is not None else "–" for v in (
                r["processor_seconds"], r["processor_cpu_seconds"],
                r["backlog_raw_consume_seconds"], raw.get("consumer"), raw.get("broker"),
                r["backlog_seconds"], back.get("worker"), back.get("broker"))))
    return [main, phases, cpu]


def _isolated_run(name: str, scale: float, bootstrap: str) -> dict:
    """One run of scenario ``name`` in a bench process of its own. Runs repeated inside one
    process differ from single runs (measured: the raw consume faster, the backlog often
    slower; README), so every repeat starts as a single run does."""
    with tempfile.TemporaryDirectory(prefix="streamfs-repeat-") as tmp:
        out, err = Path(tmp) / "run.json", Path(tmp) / "stderr"
        # a session of its own, so a Ctrl-C at the terminal reaches this process only, which
        # passes one SIGTERM on: the run then cleans up (its worker, its topics) as a bench
        # stopped so does, where subprocess.run's SIGKILL left them behind
        with open(err, "w+") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", "streamfs.cli", "bench", name, "--scale", str(scale),
                 "--warm-up", "0", "--json", str(out)],
                env={**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": bootstrap},
                stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
            try:
                proc.wait()
            except BaseException:
                proc.terminate()
                proc.wait()
                raise
            if proc.returncode != 0:
                stderr.seek(0)
                raise click.ClickException(
                    f"bench {name}: a run failed (exit {proc.returncode}):\n"
                    f"{stderr.read()[-3000:]}")
        return next(r for r in json.loads(out.read_text())["results"] if r.get("scenario"))


def _write_json(path: str, results: list[dict], checking: bool = False) -> None:
    """The figures so far to ``path``, replaced whole (a reader never sees half a file).
    ``checking``: before any run, its directory made (`--json out/bench.json` in a fresh
    clone has no out/) and a file that cannot be written said as a mistake in the command
    (exit 2), not as a traceback once every run is done."""
    target = Path(path)
    if checking:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file where a directory of the path should be
            raise click.BadParameter(f"{path}: cannot make its directory: "
                                     f"{exc.strerror or exc}", param_hint="'--json'") from None
    try:
        partial = target.with_name(f".{target.name}.partial")
        partial.write_text(json.dumps({"machine": _machine(), "results": results}, indent=1,
                                      default=str))
        partial.replace(target)
    except OSError as exc:
        if checking:
            raise click.BadParameter(f"{path}: cannot write it: {exc.strerror or exc}",
                                     param_hint="'--json'") from None
        raise click.ClickException(f"--json {path}: cannot write the figures: "
                                   f"{exc.strerror or exc}") from None
