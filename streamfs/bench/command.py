"""``streamfs bench``: pipeline throughput through Kafka and recovery time."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import click

from streamfs.bench.pipeline import PHASES, SCENARIOS
from streamfs.cli.group import _settings
from streamfs.worker.process import REPO


def _machine() -> dict:
    from streamfs.algorithms.parallel import kernel_threads

    return {"cpus": os.cpu_count(), "kernel_threads": kernel_threads(),
            "python": platform.python_version(), "platform": platform.platform()}


@click.command()
@click.argument("scenarios", nargs=-1, type=click.Choice(sorted(SCENARIOS) + ["recovery"]))
@click.option("--scale", type=float, default=1.0, show_default=True,
              help="Shrink (or grow) the number of features/instances of each scenario.")
@click.option("--local-broker", is_flag=True,
              help="Start (and stop) the local Apache Kafka of ops/kafka for the run.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None,
              help="Also write the figures to this JSON file.")
@click.option("--warm-up", "warm_up_mb", type=int, default=100, show_default=True,
              help="MB pushed through a scratch topic before timing anything, so that the "
                   "broker's JVM is warm (0: none).")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run each scenario this many times, each run in a bench process of its own, "
                   "and report the median of every figure (a ratio: the median of the runs' "
                   "ratios) with each ratio's range.")
@click.pass_context
def bench(ctx: click.Context, scenarios: tuple[str, ...], scale: float, local_broker: bool,
          json_out: str | None, warm_up_mb: int, repeat: int) -> None:
    """Measure end-to-end throughput (produce -> worker -> selected-features) against the
    in-process algorithm and a plain consumer of the same messages; `recovery` times a restart
    of 10 open streams with 500 kept columns of N = 10,000 each after 1,000 closed streams.
    Default: every scenario and recovery."""
    from rich.console import Console
    from rich.table import Table

    from streamfs.bench.pipeline import recovery, run_scenario, warm_up_broker
    from streamfs.bench.summary import median_of_runs
    from streamfs.broker import check_reachable

    settings = _settings(ctx)
    names = list(scenarios) or sorted(SCENARIOS) + ["recovery"]
    if json_out:
        # the figures are written once every run is done, many minutes on: make the file's
        # directory now (`--json out/bench.json` in a fresh clone has no out/), or say now
        # that it cannot be made, rather than lose the runs to FileNotFoundError at the end
        try:
            Path(json_out).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise click.BadParameter(f"{json_out}: cannot make its directory: {exc}",
                                     param_hint="'--json'") from None
    script = REPO / "ops" / "kafka" / "broker.sh"
    if local_broker:
        out = subprocess.run(["bash", str(script), "start"], check=True, capture_output=True,
                             text=True)
        settings.bootstrap_servers = out.stdout.strip().splitlines()[-1]
    kafka = settings.kafka_config()
    check_reachable(kafka)  # one line and exit 69, not a timeout's traceback minutes later
    results = []
    console = Console(width=200)
    try:
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
    finally:
        if local_broker:
            subprocess.run(["bash", str(script), "stop"], capture_output=True)
    if not any("scenario" in r for r in results):
        return _write(json_out, results)
    table = Table(title=f"streamfs bench ({_machine()['cpus']} cpus)")
    for col in ("scenario", "shape", "MB", "in-process/s", "pipeline/s", "raw consume/s",
                "pipeline/raw", "pipeline/raw pipeline", "backlog/raw", "backlog/bound", "pipeline/in-process",
                "worker RSS MB", "same selection"):
        table.add_column(col)
    for r in results:
        if "scenario" not in r:
            continue
        u = r["unit"]
        table.add_row(r["scenario"], "x".join(map(str, r["shape"])), str(r["megabytes"]),
                      str(r[f"processor_{u}_per_s"]), str(r[f"pipeline_{u}_per_s"]),
                      str(r[f"raw_consume_{u}_per_s"]), str(r["ratio_pipeline_to_raw"]),
                      str(r["ratio_pipeline_to_raw_pipeline"]), str(r["ratio_backlog_to_raw"]), str(r["ratio_backlog_to_bound"]),
                      str(r["ratio_pipeline_to_in_process"]), str(r.get("worker_peak_rss_mb")),
                      str(r["selection_matches_in_process"]))
    console.print(table)
    phases = Table(title="where the time goes (seconds, from the worker's /metrics)")
    names = PHASES + ("other",)
    for col in ("scenario", "run", "seconds", "in-process", "raw", *names,
                "commits (helper thread)", "transactions"):
        phases.add_column(col)
    for r in results:
        # backlog: against the raw consume; streaming: against the raw pipeline
        for run, raw in (("backlog", "backlog_raw_consume"), ("streaming", "raw_pipeline")):
            if f"{run}_phase_seconds" in r:
                seconds = r["backlog_seconds" if run == "backlog" else "pipeline_seconds"]
                phases.add_row(
                    r["scenario"], run, *(f"{v:.3f}" for v in (
                        seconds, r["processor_seconds"], r[f"{raw}_seconds"])),
                    *(f"{r[f'{run}_phase_seconds'].get(k, 0.0):.3f}" for k in names),
                    f"{r[f'{run}_commit_seconds']:.3f}", f"{r[f'{run}_transactions']:g}")
    console.print(phases)
    cpu = Table(title=f"CPU seconds against wall seconds ({_machine()['cpus']} cores; the broker "
                      "where it is the local one)")
    for col in ("scenario", "in-process wall", "in-process cpu", "raw consume wall",
                "raw consumer cpu", "raw broker cpu", "backlog wall", "backlog worker cpu",
                "backlog broker cpu"):
        cpu.add_column(col)
    for r in results:
        if "backlog_cpu_seconds" in r:
            raw, back = r["backlog_raw_consume_cpu_seconds"], r["backlog_cpu_seconds"]
            cpu.add_row(r["scenario"], *(f"{v:.3f}" if v is not None else "-" for v in (
                r["processor_seconds"], r["processor_cpu_seconds"],
                r["backlog_raw_consume_seconds"], raw.get("consumer"), raw.get("broker"),
                r["backlog_seconds"], back.get("worker"), back.get("broker"))))
    console.print(cpu)
    _write(json_out, results)


def _isolated_run(name: str, scale: float, bootstrap: str) -> dict:
    """One run of scenario ``name`` in a bench process of its own. Runs repeated inside one
    process differ from single runs (measured: the raw consume faster, the backlog often
    slower; README), so every repeat starts as a single run does."""
    with tempfile.TemporaryDirectory(prefix="streamfs-repeat-") as tmp:
        out = Path(tmp) / "run.json"
        proc = subprocess.run(
            [sys.executable, "-m", "streamfs.cli", "bench", name, "--scale", str(scale),
             "--warm-up", "0", "--json", str(out)],
            env={**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": bootstrap},
            capture_output=True, text=True)
        if proc.returncode != 0:
            raise click.ClickException(f"bench {name}: a run failed:\n{proc.stderr[-3000:]}")
        return next(r for r in json.loads(out.read_text())["results"] if r.get("scenario"))


def _write(json_out: str | None, results: list[dict]) -> None:
    if json_out:
        Path(json_out).write_text(json.dumps({"machine": _machine(), "results": results},
                                             indent=1, default=str))
