"""The all-datasets script: command lines and the README table."""

from pathlib import Path

from streamfs.evaluation import all as run_all


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
