"""The ``evaluate`` click command end to end on a small file."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from streamfs.evaluation.command import evaluate
from streamfs.evaluation.report import COLUMNS, load_results, read_results


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
    lines = res.stdout.splitlines()
    assert len(lines) == 2  # NDJSON: one complete result per algorithm
    parsed = [json.loads(line) for line in lines]
    assert all(p["n_instances"] == 80 and len(p["algorithms"]) == 1 for p in parsed)
    out = read_results(res.stdout)
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
    assert load_results(tmp_path / "new" / "r.json")["algorithms"][1]["online"]
    for line in (tmp_path / "new" / "r.json").read_text().splitlines():
        json.loads(line)


FULL = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
ENOSPC = "[Errno 28] No space left on device"


@FULL
@pytest.mark.parametrize("option", ["--json", "--markdown"])
def test_evaluate_says_in_one_line_that_its_file_cannot_be_written(tmp_path, option):
    """`--json /dev/full` ended in a traceback (the file's close failed again after the
    write), `--markdown /dev/full` too; a directory that cannot be made as well."""
    path = _data(tmp_path)
    args = [str(path), "-a", "saola", "--protocol", "holdout", "--stability-runs", "0",
            "--no-baselines"]
    res = CliRunner().invoke(evaluate, [*args, option, "/dev/full"])
    assert res.exit_code == 1, res.output
    assert res.output.splitlines()[-1] == f"Error: cannot write /dev/full: {ENOSPC}", res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    res = CliRunner().invoke(evaluate, [*args, option, str(blocked / "out")])
    assert res.exit_code == 1 and f"Error: cannot write {blocked / 'out'}: " in res.output, \
        res.output


@FULL
def test_evaluate_json_to_a_full_stdout_is_one_line(tmp_path):
    path = _data(tmp_path)
    with open("/dev/full", "w") as full:
        out = subprocess.run([sys.executable, "-m", "streamfs.cli", "evaluate", str(path),
                              "-a", "saola", "--protocol", "holdout", "--stability-runs", "0",
                              "--no-baselines", "--no-progress", "--json", "-"],
                             stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
    assert out.returncode == 1, out.stderr
    assert out.stderr.splitlines() == [f"Error: cannot write the output: {ENOSPC}"], out.stderr


def test_evaluate_reports_bad_input_as_a_usage_mistake(tmp_path):
    """Exit 2, one line: the code the README gives a mistake in the command or its input."""
    path = _data(tmp_path)
    for args, needle in ((["-a", "nope"], "unknown algorithm"),
                         (["-a", "saola", "-p", "bogus=1"], "bogus"),
                         (["-a", "saola", "-p", "ofs:eta=0.1"], "ofs")):
        res = CliRunner().invoke(evaluate, [str(path), *args])
        assert res.exit_code == 2 and needle in res.output, (args, res.output)
        assert len(res.output.strip().splitlines()) == 1, res.output
    res = CliRunner().invoke(evaluate, [str(tmp_path / "missing.csv"), "-a", "saola"])
    assert res.exit_code == 2 and "missing.csv" in res.output, res.output


def test_evaluate_table_is_never_cut_when_piped(tmp_path):
    path = _data(tmp_path)
    long = ["-p", "saola:alpha=0.0500000001", "-p", "ofs:n_features_to_select=2",
            "-p", "ofs:eta=0.2000000001"]
    res = CliRunner().invoke(evaluate, [
        str(path), "-a", "saola", "-a", "ofs", *long, "--protocol", "kfold", "--folds", "3",
        "--stability-runs", "2", "--permutations", "2"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "…" not in out and "..." not in out
    # full algorithm names with their parameters, each on one line of the table
    assert "saola (alpha=0.0500000001, test=fisher_z)" in out
    assert "ofs (n_features_to_select=2, eta=0.2000000001, normalize=True)" in out
    header = next(line for line in out.splitlines() if "algorithm" in line)
    for c in COLUMNS:
        assert c in header  # no column folded over two lines or dropped
    assert max(len(line) for line in out.splitlines()) > 80
    # unnamed features (an .npz without names) named as `select` and the worker name them;
    # feature 4 carries the class
    assert ("saola (alpha=0.0500000001, test=fisher_z) (all classes), selected over 3 "
            "splits: x4 3/3") in out
    assert res.stderr == ""  # no progress bar when stderr is not a terminal


def test_evaluate_progress_can_be_forced(tmp_path):
    path = _data(tmp_path)
    res = CliRunner().invoke(evaluate, [
        str(path), "-a", "saola", "-a", "ofs", "--protocol", "kfold", "--folds", "3",
        "--stability-runs", "2", "--permutations", "2", "--json", "-", "--progress"])
    assert res.exit_code == 0, res.output
    # 3 splits and 2 stability runs each, plus 2 orders of OFS's mistake rate
    assert "12/12" in res.stderr and "ofs" in res.stderr
    assert [json.loads(line)["algorithms"][0]["algorithm"] for line in res.stdout.splitlines()] \
        == ["saola", "ofs"]


def test_evaluate_names_selected_features_of_sklearn_data():
    res = CliRunner().invoke(evaluate, [
        "sklearn:breast_cancer", "-a", "saola", "--protocol", "holdout", "--stability-runs",
        "0", "--no-baselines"])
    assert res.exit_code == 0, res.output
    line = next(x for x in res.stdout.splitlines() if "selected over 1 splits" in x)
    from sklearn.datasets import load_breast_cancer

    names = [str(n) for n in load_breast_cancer().feature_names]
    shown = line.split(": ", 1)[1].split(", ")
    assert shown and all(item.rsplit(" ", 1)[0] in names for item in shown)


def test_evaluate_group_saola_takes_its_groups_from_a_file(tmp_path):
    path = _data(tmp_path)
    groups = tmp_path / "groups.json"
    groups.write_text("[[0, 1, 2], [3, 4, 5, 6, 7]]")
    res = CliRunner().invoke(evaluate, [
        str(path), "-a", "group-saola", "-a", "saola", "--groups", str(groups), "--protocol",
        "holdout", "--stability-runs", "0", "--no-baselines", "--plots", str(tmp_path / "p"),
        "--json", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    group_saola, saola = load_results(tmp_path / "r.json")["algorithms"]
    assert all(4 in s for s in group_saola["selections"])
    # the trace fed whole groups: 3 columns, then 5 more; SAOLA's fed one column at a time
    assert [seen for seen, _ in group_saola["selection_trace"]] == [3, 8]
    assert [seen for seen, _ in saola["selection_trace"]] == list(range(1, 9))


def test_evaluate_refuses_group_saola_without_groups_and_groups_without_it(tmp_path):
    path = _data(tmp_path)
    groups = tmp_path / "groups.json"
    groups.write_text("[[0, 1, 2], [3, 4, 5, 6, 7]]")
    bad = tmp_path / "bad.json"
    bad.write_text("[[0, 1, 2], [3, 4]]")
    for args, needle in ((["-a", "group-saola"], "group-saola needs the groups"),
                         (["-a", "saola", "--groups", str(groups)], "group-saola only"),
                         (["-a", "group-saola", "--groups", str(bad)], "bad.json")):
        res = CliRunner().invoke(evaluate, [str(path), *args])
        assert res.exit_code == 2 and needle in res.output, (args, res.output)


def test_evaluate_refuses_protocol_settings_it_cannot_run_with(tmp_path):
    """Exit 2 naming the option: 0 repeats died on an IndexError (exit 1), 1 fold ran 2 folds
    under a 1-fold title, and the rest ran with values that mean nothing."""
    path = _data(tmp_path)
    for option, value, needle in (
            ("--repeats", "0", "0 is not in the range x>=1"),
            ("--repeats", "-1", "-1 is not in the range x>=1"),
            ("--folds", "1", "1 is not in the range x>=2"),
            ("--folds", "0", "0 is not in the range x>=2"),
            ("--stability-runs", "-1", "-1 is not in the range x>=0"),
            ("--stability-runs", "1", "1 run: the measure compares 2 or more (0 skips it)"),
            ("--permutations", "-1", "-1 is not in the range x>=0"),
            ("--time-budget", "-5", "-5.0 is not in the range x>0"),
            ("--mi-bins", "0", "0 is not in the range x>=2"),
            ("--max-instances", "0", "0 is not in the range x>=1"),
            ("--test-size", "1", "1.0 is not in the range 0<x<1"),
            ("--test-size", "0", "0.0 is not in the range 0<x<1")):
        res = CliRunner().invoke(evaluate, [str(path), "-a", "saola", "--protocol", "kfold",
                                            option, value])
        assert res.exit_code == 2, (option, value, res.output)
        assert f"Invalid value for '{option}': {needle}" in res.output, res.output
    from streamfs.evaluation.runner import evaluate_dataset

    X, y = np.load(path)["X"], np.load(path)["y"]
    with pytest.raises(ValueError, match="n_repeats must be at least 1, got 0"):
        evaluate_dataset(X, y, [("saola", {})], n_repeats=0)  # the Python API too


def test_evaluate_refuses_a_one_vs_rest_label_that_is_no_class(tmp_path):
    """Also where no algorithm takes it (saola), on binary and multi-class data alike; and a
    subsample too small for stratified splits says which class it starved."""
    path = _data(tmp_path)
    for data, classes in ((str(path), "['neg', 'pos']"), ("sklearn:iris", "['0', '1', '2']")):
        for algorithm in ("saola", "ofs"):
            res = CliRunner().invoke(evaluate, [data, "-a", algorithm, "--one-vs-rest", "nope"])
            assert res.exit_code == 2, res.output
            assert res.output == (f"Error: one-vs-rest label 'nope' not among the classes "
                                  f"{classes}\n")
    res = CliRunner().invoke(evaluate, [str(path), "-a", "saola", "--max-instances", "3"])
    assert res.exit_code == 2 and res.output == (
        "Error: class 'pos' has 1 instance in the subsample of max_instances=3: the stratified "
        "splits need at least 2 of every class\n"), res.output


def test_evaluate_says_that_it_sets_the_classes_itself(tmp_path):
    path = _data(tmp_path)
    res = CliRunner().invoke(evaluate, [str(path), "-a", "ofs", "-p", "classes=[neg,pos]"])
    assert res.exit_code == 2, res.output
    assert "ofs: evaluate sets classes itself" in res.output


def test_a_label_error_says_the_last_column_was_taken_without_label(tmp_path):
    """Without --label the last column of a CSV is the label; evaluate's label errors (a class
    of one instance, a one-vs-rest class not among them) did not say so, as select's do."""
    rng = np.random.default_rng(4)
    path = tmp_path / "d.csv"
    np.savetxt(path, np.c_[np.arange(40) % 2, rng.normal(size=(40, 3))], delimiter=",",
               header="class,a,b,c", comments="")
    note = ("; the last column, 3 ('c'), was taken as the label because no --label was "
            "given: name the label with --label")
    out = CliRunner().invoke(evaluate, [str(path), "-a", "saola"])
    assert out.exit_code == 2
    assert out.output.rstrip().endswith("the stratified splits need at least 2 of every class"
                                        + note), out.output
    codes = tmp_path / "codes.csv"  # its last column has two values: classes 5 and 6
    np.savetxt(codes, np.c_[np.arange(40) % 2, rng.normal(size=40), 5 + np.arange(40) % 2],
               delimiter=",", header="class,a,c", comments="")
    out = CliRunner().invoke(evaluate, [str(codes), "-a", "ofs", "--one-vs-rest", "1"])
    assert out.exit_code == 2 and "not among the classes ['5', '6']" in out.output
    assert out.output.rstrip().endswith(note.replace("3 ('c')", "2 ('c')")), out.output
    given = CliRunner().invoke(evaluate, [str(codes), "-a", "ofs", "--label", "class",
                                          "--one-vs-rest", "7"])
    assert given.exit_code == 2
    assert given.output.rstrip().endswith("not among the classes ['0', '1']"), given.output


def test_evaluate_shows_a_selector_s_advice_once_not_once_per_split(tmp_path):
    # each split is a stream of its own, and scikit-learn's catch_warnings in every fit made
    # Python forget what it had shown: the same advice came once per split (10 here)
    import subprocess
    import sys

    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)  # unscaled: the areas dominate unit-norm rows
    np.savez(tmp_path / "bc.npz", X=X, y=y)
    out = subprocess.run([sys.executable, "-m", "streamfs.cli", "evaluate",
                          str(tmp_path / "bc.npz"), "-a", "pe-trun", "--repeats", "10",
                          "--json", str(tmp_path / "out.json")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    advice = [line for line in out.stderr.splitlines()
              if line.startswith("WARNING streamfs: PerceptronTruncation(normalize=True) scales")]
    assert 1 <= len(advice) == len(set(advice)) < 10, out.stderr


def test_evaluate_checks_its_outputs_and_algorithms_before_the_run(tmp_path):
    """A --plots path that is a file, or a --markdown file that cannot be made, was said
    only after the whole run; the same algorithm twice gave two identical rows."""
    path = _data(tmp_path)
    args = [str(path), "-a", "saola", "--protocol", "holdout", "--stability-runs", "0",
            "--no-baselines", "--no-progress"]
    afile = tmp_path / "afile"
    afile.write_text("")
    res = CliRunner().invoke(evaluate, [*args, "--plots", str(afile)])
    assert res.exit_code == 1 and "a file, not a directory for the plots" in res.output
    assert "saola" not in res.output.split("Error:")[0], res.output  # no table: no run
    res = CliRunner().invoke(evaluate, [*args, "--markdown", str(afile / "x.md")])
    assert res.exit_code == 1 and res.output.startswith("Error: cannot write "), res.output
    res = CliRunner().invoke(evaluate, [*args, "-a", "saola"])
    assert res.exit_code == 2 and "--algorithm saola given twice" in res.output
    md = tmp_path / "new" / "report.md"
    res = CliRunner().invoke(evaluate, [*args, "--markdown", str(md)])
    assert res.exit_code == 0 and md.read_text().startswith(f"{path}: "), res.output


def test_a_kfold_cut_by_the_smallest_class_says_so(tmp_path):
    path = _data(tmp_path)
    res = CliRunner().invoke(evaluate, [str(path), "-a", "saola", "--protocol", "kfold",
                                        "--folds", "1000", "--stability-runs", "0",
                                        "--no-baselines", "--no-progress", "--json", "-"])
    assert res.exit_code == 0, res.output
    line = json.loads(res.output.splitlines()[0])
    n_splits = line["algorithms"][0]["n_splits"]
    assert line["protocol"]["n_folds_used"] == [n_splits] and n_splits == 40  # 40 of a class


def test_options_given_that_the_run_does_not_use_are_warned_about(tmp_path):
    """`--folds 5` with the default protocol ran 10 random splits without a word."""
    path = _data(tmp_path)
    args = [str(path), "--stability-runs", "0", "--no-baselines", "--no-progress",
            "--json", "-"]
    res = CliRunner().invoke(evaluate, [*args, "-a", "saola", "--folds", "5", "--repeats", "2",
                                        "--permutations", "3", "--mi-bins", "4"])
    assert res.exit_code == 0, res.output
    assert res.stderr.splitlines()[:3] == [
        "warning: --folds is ignored with --protocol repeated: it is for kfold",
        "warning: --mi-bins is ignored with --no-baselines: it is for the mutual_info_classif "
        "baseline",
        "warning: --permutations is ignored with feature-stream algorithms only: it is for "
        "instance-stream learners"], res.stderr
    assert json.loads(res.stdout.splitlines()[0])["algorithms"][0]["n_splits"] == 2
    # what the run uses is not warned about, nor what was left at its default
    res = CliRunner().invoke(evaluate, [*args, "-a", "ofs", "--protocol", "kfold", "--folds",
                                        "3", "--permutations", "2"])
    assert res.exit_code == 0 and "warning: --" not in res.stderr, res.stderr
