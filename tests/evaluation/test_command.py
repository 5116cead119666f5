"""The ``evaluate`` click command end to end on a small file."""

import json

import numpy as np
from click.testing import CliRunner

from streamfs.evaluation.command import evaluate


def _data(tmp_path):
    rng = np.random.default_rng(3)
    y = np.repeat(["neg", "pos"], 40)
    X = rng.normal(size=(80, 8))
    X[:, 4] += 2.5 * (y == "pos")
    path = tmp_path / "toy.npz"
    np.savez(path, X=X, y=y)
    return path


def test_evaluate_json_to_stdout(tmp_path):
    path = _data(tmp_path)
    res = CliRunner().invoke(evaluate, [
        str(path), "-a", "saola", "-a", "ofs", "-p", "saola:alpha=0.05",
        "-p", "ofs:n_features_to_select=2", "--protocol", "kfold", "--folds", "3",
        "--stability-runs", "2", "--permutations", "2", "--json", "-"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    saola, ofs = out["algorithms"]
    assert saola["params"] == {"alpha": 0.05, "test": "fisher_z"}
    assert saola["n_splits"] == 3 and all(4 in s for s in saola["selections"])
    assert saola["classifiers"]["svm"]["accuracy"]["mean"] > 0.75
    assert ofs["online"]["curve"][-1][0] == 80


def test_evaluate_table_markdown_plots(tmp_path):
    path = _data(tmp_path)
    res = CliRunner().invoke(evaluate, [
        str(path), "-a", "saola", "-a", "ofs", "--protocol", "holdout", "--stability-runs",
        "0", "--permutations", "2", "--no-baselines", "--markdown", str(tmp_path / "t.md"),
        "--plots", str(tmp_path / "plots"), "--json", str(tmp_path / "new" / "r.json")])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "t.md").read_text()
    assert "| saola (test=fisher_z) | all classes | 1 |" in md
    for name in ("accuracy_vs_features", "mistake_rate", "selection_size"):
        assert (tmp_path / "plots" / f"{name}.png").stat().st_size > 1000
    assert json.loads((tmp_path / "new" / "r.json").read_text())["algorithms"][1]["online"]


def test_evaluate_reports_bad_input(tmp_path):
    path = _data(tmp_path)
    res = CliRunner().invoke(evaluate, [str(path), "-a", "nope"])
    assert res.exit_code != 0 and "unknown algorithm" in res.output
    res = CliRunner().invoke(evaluate, [str(path), "-a", "saola", "-p", "bogus=1"])
    assert res.exit_code != 0 and "bogus" in res.output
