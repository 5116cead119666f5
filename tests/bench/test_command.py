"""`streamfs bench` end to end on a tiny scenario: it runs, and its figures are consistent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

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
