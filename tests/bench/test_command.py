"""`streamfs bench` end to end on a tiny scenario: it runs, and its figures are consistent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.processes import children_of, gone

pytestmark = pytest.mark.kafka


def _topics(bootstrap: str) -> set[str]:
    from confluent_kafka.admin import AdminClient

    # without the broker's own topics (__consumer_offsets, __transaction_state), which a
    # fresh broker creates on first use
    return {t for t in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics
            if not t.startswith("__")}


def test_bench_sparse_features_smoke(kafka_bootstrap, broker_run_dir, tmp_path):
    out = tmp_path / "bench.json"
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": kafka_bootstrap, "TMPDIR": str(tmp_path)}
    if broker_run_dir is not None:  # the bench can then read the broker's CPU time
        env["STREAMFS_RUN"] = str(broker_run_dir)
    before = _topics(kafka_bootstrap)
    proc = subprocess.run(
        [sys.executable, "-m", "streamfs.cli", "bench", "sparse-features", "--scale", "0.01",
         "--warm-up", "3", "--repeat", "2", "--json", str(out)],
        env=env, text=True, capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # the run deleted every topic it made (inputs, results, changelogs): nothing left behind
    deadline = time.monotonic() + 60
    while (left := _topics(kafka_bootstrap) - before) and time.monotonic() < deadline:
        time.sleep(0.5)  # polling the broker's metadata: deletion completes asynchronously
    assert not left
    # and the workers' local state copies: only their logs stay, one directory per run
    workdirs = list(tmp_path.glob("streamfs-bench-*"))
    assert len(workdirs) == 2
    for workdir in workdirs:
        assert {p.name for p in workdir.iterdir()} == {
            "sparse-features-backlog-worker.log", "sparse-features-worker.log"}
    report = json.loads(out.read_text())
    assert report["machine"]["kernel_threads"] >= 1  # how the figures were computed
    warm, summary = report["results"]
    assert warm["warm_up_megabytes"] == 3 and warm["warm_up_seconds"] > 0
    # --repeat 2: both runs (each in a bench process of its own) kept, and the summary's
    # figures are their medians
    assert summary["repeats"] == 2 and len(summary["runs"]) == 2
    for key, (low, high) in summary["ratio_ranges"].items():
        assert low <= summary[key] <= high
        assert [low, high] == sorted(r[key] for r in summary["runs"])
    assert summary["backlog_seconds"] == pytest.approx(
        sum(r["backlog_seconds"] for r in summary["runs"]) / 2)
    assert summary["selection_matches_in_process"] is True
    for run in summary["runs"]:
        _check_run(run, broker_cpu=broker_run_dir is not None)


def _check_run(run: dict, broker_cpu: bool) -> None:
    assert run["scenario"] == "sparse-features" and run["messages"] >= 3
    # the selection read back from the broker is the in-process one
    assert run["final_selection_size"] > 0 and run["selection_matches_in_process"] is True
    assert 0 < run["publish_seconds"] < run["pipeline_seconds"]
    assert run["ratio_pipeline_to_raw"] == pytest.approx(
        run["raw_consume_seconds"] / run["pipeline_seconds"], rel=1e-3)
    # the raw pipeline: the same publish with a plain consumer in the worker's place
    assert run["raw_pipeline_seconds"] > 0 and run["raw_pipeline_publish_seconds"] > 0
    assert run["ratio_pipeline_to_raw_pipeline"] == pytest.approx(
        run["raw_pipeline_seconds"] / run["pipeline_seconds"], rel=1e-3)
    # backlog mode: the same messages already on fresh topics, a cold worker
    assert run["backlog_seconds"] > 0 and run["backlog_raw_consume_seconds"] > 0
    assert run["ratio_backlog_to_raw"] == pytest.approx(
        run["backlog_raw_consume_seconds"] / run["backlog_seconds"], rel=1e-3)
    # where its time went, from the worker's counters: the steps ran, the batches were
    # produced, the loop's phases add up to the backlog time (the remainder is "other"), and
    # a helper thread completed the transactions meanwhile
    phases = run["backlog_phase_seconds"]
    assert set(phases) == {"fetch", "steps", "checkpoint", "commit_wait", "produce",
                           "local_copy", "other"}
    assert phases["steps"] > 0 and phases["produce"] > 0 and phases["fetch"] > 0
    assert sum(phases.values()) == pytest.approx(run["backlog_seconds"], abs=1e-3)
    assert run["backlog_commit_seconds"] > 0 and run["backlog_transactions"] >= 1
    # the streaming worker's counters too (it also ran before the publish: no "other")
    streaming = run["streaming_phase_seconds"]
    assert set(streaming) == set(phases) - {"other"}
    assert streaming["steps"] > 0 and streaming["produce"] > 0
    assert run["streaming_commit_seconds"] > 0 and run["streaming_transactions"] >= 1
    # CPU seconds beside the wall times: the in-process path's, the raw consumer's and the
    # backlog worker's always; the broker's where the bench can see its process
    assert 0 < run["processor_cpu_seconds"]
    raw, backlog = run["backlog_raw_consume_cpu_seconds"], run["backlog_cpu_seconds"]
    assert set(raw) == {"consumer"} | ({"broker"} if broker_cpu else set())
    assert set(backlog) == {"worker"} | ({"broker"} if broker_cpu else set())
    assert all(v >= 0 for v in (*raw.values(), *backlog.values()))


def test_bench_json_into_a_directory_not_made_yet(kafka_bootstrap, tmp_path, monkeypatch):
    """The README's `streamfs bench ... --json out/bench.json` in a fresh clone, which has no
    `out/`: the directory is made before the runs, and the figures written at the end (they
    were lost to a FileNotFoundError once every run was done). A directory that cannot be
    made is a mistake in the command, said before anything runs (exit 2)."""
    from click.testing import CliRunner

    import streamfs.bench.pipeline as pipeline
    from streamfs.cli import main

    ran = []
    monkeypatch.setattr(pipeline, "recovery", lambda kafka: ran.append(1) or {"recovery": 1.0})
    out = tmp_path / "out" / "bench.json"
    res = CliRunner().invoke(main, ["-b", kafka_bootstrap, "bench", "recovery", "--warm-up", "0",
                                    "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["results"] == [{"recovery": 1.0}]

    (tmp_path / "file").write_text("")
    res = CliRunner().invoke(main, ["-b", kafka_bootstrap, "bench", "recovery", "--warm-up", "0",
                                    "--json", str(tmp_path / "file" / "bench.json")])
    assert res.exit_code == 2 and "cannot make its directory" in res.output
    assert ran == [1]  # the second command ran nothing


@pytest.mark.parametrize("args,needle", [
    (["--scale", "nan"], "Invalid value for '--scale': must be a finite number above 0"),
    (["--scale", "inf"], "Invalid value for '--scale': must be a finite number above 0"),
    (["--scale", "0"], "Invalid value for '--scale': must be a finite number above 0"),
    (["--scale", "-1"], "Invalid value for '--scale': must be a finite number above 0"),
    (["--warm-up", "-5"], "Invalid value for '--warm-up'"),
    (["--json", ""], "Invalid value for '--json': an empty file name"),
    (["--json", "/proc/streamfs-bench.json"], "Invalid value for '--json': "
                                              "/proc/streamfs-bench.json: cannot write it"),
])
def test_a_mistake_in_the_bench_command_is_said_before_the_broker_is_asked(args, needle):
    """--scale nan and inf were tracebacks after the broker check and the warm-up, 0 and -1
    ran 10 features without a word, --warm-up -5 meant 0, --json "" wrote nothing, and a
    --json file that cannot be written was a traceback once every run was done."""
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1"}  # never reached
    out = subprocess.run([sys.executable, "-m", "streamfs.cli", "bench", "recovery", *args],
                         env=env, text=True, capture_output=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert needle in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_local_broker_uses_a_running_one_and_says_why_one_did_not_start(tmp_path,
                                                                         monkeypatch):
    """--local-broker ran `broker.sh start`, which takes a running broker as its own, then
    `stop`: it stopped the broker a user had started (and every worker on it). A start that
    failed was CalledProcessError's traceback, without the script's reason."""
    from rich.console import Console

    from streamfs.bench.command import _local_broker
    from streamfs.cli.errors import UsageProblem

    script = tmp_path / "broker.sh"
    script.write_text('case "$1" in\n'
                      '  status) [ -f running ] && { echo 127.0.0.1:9999; exit 0; }\n'
                      '          echo "[kafka] not running" >&2; exit 1 ;;\n'
                      '  start) echo "[kafka] fetching" >&2\n'
                      '         echo "[kafka] STREAMFS_RUN=/x: not empty" >&2; exit 2 ;;\n'
                      'esac\n')
    console = Console(file=open(os.devnull, "w"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageProblem) as refused:
        _local_broker(script, console)
    assert str(refused.value) == ("--local-broker: could not start the local broker: "
                                  "STREAMFS_RUN=/x: not empty")
    (tmp_path / "running").touch()
    assert _local_broker(script, console) == ("127.0.0.1:9999", False)  # not to stop


def test_the_printed_tables_are_the_readme_s_with_each_ratio_s_range():
    """The table printed rates (features/s or instances/s, no unit) under other names than
    the README's and the history's, without the backlog, the publish or the ranges that
    --repeat's help promised; the streaming run's "other" was a measured-looking 0.000."""
    from rich.console import Console

    from streamfs.bench.command import summary_tables
    from streamfs.bench.pipeline import PHASES

    phases = {p: 0.01 for p in PHASES}
    r = {"scenario": "dense-features", "megabytes": 320.4, "processor_seconds": 0.091,
         "raw_consume_seconds": 0.30, "backlog_seconds": 0.318, "pipeline_seconds": 0.857,
         "publish_seconds": 0.79, "raw_pipeline_seconds": 0.66, "ratio_backlog_to_raw": 0.94,
         "ratio_backlog_to_bound": 0.94, "ratio_pipeline_to_raw": 0.37,
         "ratio_pipeline_to_raw_pipeline": 0.71, "worker_peak_rss_mb": 419.2,
         "backlog_worker_peak_rss_mb": 476.0, "selection_matches_in_process": True,
         "ratio_ranges": {"ratio_backlog_to_raw": [0.91, 0.98]},
         "backlog_phase_seconds": {**phases, "other": 0.022}, "streaming_phase_seconds": phases,
         "backlog_commit_seconds": 0.2, "streaming_commit_seconds": 0.7,
         "backlog_transactions": 12, "streaming_transactions": 19}
    console = Console(width=400, record=True, file=open(os.devnull, "w"))
    for table in summary_tables([{"warm_up_seconds": 1.0}, r], cpus=2):
        console.print(table)
    text = console.export_text()
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in text.splitlines()
             if "│ dense-features" in line]
    assert cells[0] == ["dense-features", "320.4", "0.09", "0.30", "0.32", "0.94 (0.91–0.98)",
                        "0.94", "0.86", "0.79", "0.66", "0.37", "0.71", "419, 476", "yes"]
    backlog, streaming = cells[1], cells[2]
    assert backlog[:3] == ["dense-features", "backlog", "0.318"] and backlog[-3] == "0.022"
    assert streaming[:3] == ["dense-features", "streaming", "0.857"] and streaming[-3] == "–"
    assert summary_tables([{"recovery": 1.0}], cpus=2) == []


def test_local_broker_leaves_a_running_broker_running(kafka_bootstrap, broker_run_dir,
                                                      monkeypatch):
    """The README's quickstart starts a broker; `bench --local-broker` then stopped it."""
    from click.testing import CliRunner

    import streamfs.bench.pipeline as pipeline
    from streamfs.cli import main

    if broker_run_dir is None:
        pytest.skip("the session's broker was not started by ops/kafka/broker.sh")
    monkeypatch.setattr(pipeline, "recovery", lambda kafka: {"recovery": 1.0})
    res = CliRunner().invoke(main, ["bench", "recovery", "--warm-up", "0", "--local-broker"],
                             env={"STREAMFS_RUN": str(broker_run_dir)})
    assert res.exit_code == 0, res.output
    assert f"using the local broker already running at {kafka_bootstrap}" in res.output
    status = subprocess.run(["bash", "ops/kafka/broker.sh", "status"], text=True,
                            capture_output=True, env={**os.environ,
                                                      "STREAMFS_RUN": str(broker_run_dir)})
    assert status.returncode == 0 and status.stdout.strip() == kafka_bootstrap, status.stderr


def test_a_bench_stopped_by_sigterm_cleans_up_as_for_ctrl_c(kafka_bootstrap, tmp_path):
    """`timeout` or a CI's cancel (SIGTERM) left the worker running (its parent gone) and the
    run's topics and local copies behind; Ctrl-C cleaned them up."""
    import signal

    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": kafka_bootstrap, "TMPDIR": str(tmp_path)}
    before = _topics(kafka_bootstrap)
    proc = subprocess.Popen([sys.executable, "-m", "streamfs.cli", "bench", "dense-features",
                             "--scale", "0.05", "--warm-up", "0"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        workers: set[int] = set()
        while not workers and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)  # polling for the worker the run starts (after its topics)
            workers = {p for p in children_of(proc.pid) if "worker" in open(
                f"/proc/{p}/cmdline").read().split("\0")} if _topics(kafka_bootstrap) - before \
                else set()
        assert workers, f"no worker started; exit {proc.poll()}"
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr, stderr
    assert all(gone(pid) for pid in workers)  # stopped, not left running without its parent
    deadline = time.monotonic() + 60
    while (left := _topics(kafka_bootstrap) - before) and time.monotonic() < deadline:
        time.sleep(0.5)  # polling the broker's metadata: deletion completes asynchronously
    assert not left
    assert not list(tmp_path.glob("streamfs-bench-*/data"))  # the local copies too
