"""The all-datasets script: command lines and the README table."""

from pathlib import Path

from streamfs.evaluation import all as run_all
from tests.processes import children_of, gone


def test_command_line_per_dataset_or_pair(tmp_path):
    cmd = run_all.command("colon", ["saola", "kofsd"], tmp_path)
    assert cmd[1:6] == ["-m", "streamfs.evaluation.command", "colon", "-a", "saola"]
    assert cmd[-1] == str(tmp_path / "colon.json")
    assert run_all.command("colon", ["ofs"], tmp_path)[-1] == str(tmp_path / "colon.ofs.json")


def test_readme_rows_for_results_and_timeouts(tmp_path: Path):
    result = {
        "n_instances": 10, "n_features": 4, "classes": {"a": 5, "b": 5},
        "algorithms": [{"algorithm": "saola", "params": {"test": "mi"}, "task": "all classes",
                        "n_splits": 3, "n_selected": {"mean": 2.0},
                        "selection_time": {"mean": 0.5}, "redundancy": {"mean": 0.1},
                        "classifiers": {}, "stability": {"stability": 0.75}}],
    }
    runs = [
        {"dataset": "toy", "algorithm": "saola", "status": "ok", "wall": 3.2, "result": result},
        {"dataset": "big", "algorithm": "kofsd", "status": "timeout after 420 s", "wall": 420},
    ]
    run_all.write_readme(tmp_path, runs, ["--out", "x"])
    text = (tmp_path / "README.md").read_text()
    assert ("| toy | 10x4 | 2 | saola (test=mi) | all classes | 3 | 2.0 | 0.500 | 0.100 | "
            "0.750 | – | – | – | – | – | – | 3 |") in text
    assert "| big |  |  | kofsd | timeout after 420 s |" in text
    assert "python -m streamfs.evaluation.all --out x" in text


def test_sigterm_stops_the_runs_and_their_children_at_once(tmp_path):
    """Ctrl-C went on for a minute (the interrupted dataset was rerun algorithm by algorithm,
    then the queued ones), ended in a traceback and wrote no table; SIGTERM left the running
    child without its parent, its timeout no longer enforced."""
    import signal
    import subprocess
    import sys
    import time

    import pytest

    from streamfs.datasets import available

    if not {"lofs_spect", "lofs_wdbc"} <= set(available()):
        pytest.skip("the datasets lofs_spect and lofs_wdbc are not on this machine")
    proc = subprocess.Popen([sys.executable, "-m", "streamfs.evaluation.all", "--out",
                             str(tmp_path / "ev"), "--datasets", "lofs_spect,lofs_wdbc"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        children: set[int] = set()
        while not children and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)  # polling for the first dataset's `streamfs evaluate`
            children = children_of(proc.pid)
        assert children, proc.communicate()
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1].startswith("interrupted: 0 of 2 datasets done"), err
    assert "Traceback" not in err and took < 20, (took, err)
    assert all(gone(pid) for pid in children)


def test_resume_runs_again_what_did_not_finish(tmp_path, monkeypatch):
    """--resume reused a dataset whose runs had failed or timed out (an earlier --timeout 1),
    and the new table reported them under the new command."""
    ran = []

    def fake(dataset, algorithms, out, timeout):
        ran.append(timeout)
        return [{"dataset": dataset, "algorithm": a, "status": "ok", "wall": 1.0}
                for a in algorithms]

    monkeypatch.setattr(run_all, "_run_dataset", fake)
    record = tmp_path / "toy.runs.json"
    record.write_text('[{"dataset": "toy", "algorithm": "saola", "status": "timeout after 1 s",'
                      ' "wall": 1}]')
    assert run_all.run_dataset("toy", ["saola"], tmp_path, 150, resume=True)[0]["status"] == "ok"
    assert ran == [150]
    assert run_all.run_dataset("toy", ["saola"], tmp_path, 150, resume=True)[0]["status"] == "ok"
    assert ran == [150]  # finished now: reused
