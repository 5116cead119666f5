"""`streamfs select --as-stream ID`: the random learners draw what the worker draws for ID."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from streamfs.cli import main
from streamfs.offline import run_offline


@pytest.mark.parametrize("algorithm", ["ofs-partial", "pe-rand"])
def test_select_as_stream_seeds_as_the_worker_does_for_that_id(tmp_path, algorithm):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 20))
    y = (X[:, :6].sum(axis=1) > 0).astype(int)
    path = tmp_path / "d.npz"
    np.savez(path, X=X, y=y)
    params = {"n_features_to_select": 4}

    def worker(stream: str) -> list:
        """The worker's final selection of ``stream``: its StreamProcessor fed a producer's
        messages (smaller blocks than select's)."""
        final = run_offline(algorithm, X, y, params, stream=stream, block_bytes=4096)
        return [final["params"]["random_state"], *((i["feature"], i["score"])
                                                   for i in final["selection"])]

    def select(*args: str) -> list:
        out = CliRunner().invoke(main, ["select", str(path), "-a", algorithm, "-p",
                                        "n_features_to_select=4", "--json", *args])
        assert out.exit_code == 0, out.output
        final = json.loads(out.stdout)
        return [final["params"]["random_state"], *((i["feature"], i["score"])
                                                   for i in final["selection"])]

    assert worker("s7")[1:] != worker("s8")[1:]  # the seed matters on this data
    for stream in ("s7", "s8"):
        assert select("--as-stream", stream) == worker(stream)
    assert select() == worker("offline")  # the default, as before


def test_as_stream_refuses_an_id_the_worker_would(tmp_path):
    path = tmp_path / "d.npz"
    np.savez(path, X=np.zeros((4, 2)), y=[0, 1, 0, 1])
    out = CliRunner().invoke(main, ["select", str(path), "-a", "rand", "--as-stream", ""])
    assert out.exit_code == 2 and "--as-stream: the stream id is empty" in out.output


@pytest.mark.parametrize("algorithm, params, rule", [
    ("kofsd", [], "exceeds alpha (0.5); a smaller alpha admits more"),
    ("saola", ["-p", "alpha=1e-300"], "p-value is below alpha (1e-300)"),
    ("saola-max", ["-p", "test=mi", "-p", "delta=0.99"], "exceeds delta (0.99)"),
])
def test_an_empty_selection_names_the_relevance_test_that_emptied_it(tmp_path, algorithm,
                                                                     params, rule):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)  # ten classes: no pixel reaches K-OFSD's default 0.5
    path = tmp_path / "digits.npz"
    np.savez(path, X=X, y=y)
    out = CliRunner().invoke(main, ["select", str(path), "-a", algorithm, *params])
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert "nothing selected: all 64 features failed the relevance test" in text
    assert rule in text


def test_a_selection_with_features_has_no_empty_note(tmp_path):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    path = tmp_path / "digits.npz"
    np.savez(path, X=X, y=y)
    out = CliRunner().invoke(main, ["select", str(path), "-a", "kofsd", "-p", "alpha=0.1"])
    assert out.exit_code == 0, out.output
    assert "nothing selected" not in out.output


def test_the_heading_and_the_counters_are_lines_of_their_own(tmp_path):
    # as the table's title they wrapped at the narrow table's width: "... · final · rejected"
    # over "messages 0, ...", which read as a rejected selection
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3))
    path = tmp_path / "three.npz"
    np.savez(path, X=X, y=(X[:, 0] > 0).astype(int))
    out = CliRunner().invoke(main, ["select", str(path), "-a", "saola"])
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()  # stderr may say numba compiles (a fresh clone's first run)
    assert lines[0] == "offline · saola · v2 · final"
    assert lines[1].startswith("rejected messages 0, n features seen 3, n irrelevant ")


def _bc_csv(tmp_path, name="bc.csv", rename=None, sep=","):
    """scikit-learn's breast cancer as a CSV with a header and a text label column "class"
    (last), as an outside tester wrote it; ``rename`` maps column positions to new names."""
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame
    frame["class"] = frame.pop("target").map({0: "malignant", 1: "benign"})
    if rename:
        frame.columns = [rename.get(j, c) for j, c in enumerate(frame.columns)]
    path = tmp_path / name
    frame.to_csv(path, index=False, sep=sep)
    return path


def _every_command_refuses(path, message):
    """select, evaluate and both produce commands exit 2 on ``path`` with ``message``."""
    for args in (["select", str(path), "--label", "class", "-a", "saola"],
                 ["evaluate", str(path), "--label", "class", "-a", "saola"],
                 ["produce", "features", str(path), "--label", "class", "-a", "saola",
                  "--stream", "s"],
                 ["produce", "instances", str(path), "--label", "class", "-a", "ofs",
                  "--stream", "s"]):
        out = CliRunner().invoke(main, args)
        assert out.exit_code == 2, (args, out.output)
        assert out.output.strip() == message, args


def test_every_command_refuses_a_csv_header_with_a_duplicate_name(tmp_path):
    path = _bc_csv(tmp_path, rename={5: "mean radius"})
    _every_command_refuses(path, f"Error: {path}, line 1: duplicate column name 'mean radius' "
                                 "(columns 0 and 5): name each column once")


def test_every_command_refuses_a_parquet_file_with_a_duplicate_name(tmp_path):
    """pyarrow writes such files; `produce instances` failed with a KeyError traceback, the
    others with "not a readable Parquet file (Multiple matches for FieldRef...)"."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = pd.read_csv(_bc_csv(tmp_path))
    table = pa.Table.from_pandas(frame, preserve_index=False)
    path = tmp_path / "bc.parquet"
    pq.write_table(table.rename_columns([*table.column_names[:5], "mean radius",
                                         *table.column_names[6:]]), path)
    _every_command_refuses(path, f"Error: {path}: duplicate column name 'mean radius' "
                                 "(columns 0 and 5): name each column once")


def test_a_file_of_another_separator_gets_a_hint(tmp_path):
    """The separator follows the suffix (',' .csv, tab .tsv): a ';' or tab file said only
    "delimiter ','"."""
    semi = _bc_csv(tmp_path, sep=";")
    tabs = _bc_csv(tmp_path, name="tabs.csv", sep="\t")
    commas = _bc_csv(tmp_path, name="commas.tsv")
    for path, hint in ((semi, "it holds ';': streamfs reads ',' (.csv) and tab (.tsv) "
                              "separators only: convert the file"),
                       (tabs, "it holds tabs: name a tab-separated file .tsv"),
                       (commas, "it holds ',': name a comma-separated file .csv")):
        out = CliRunner().invoke(main, ["select", str(path), "--label", "class", "-a", "saola"])
        assert out.exit_code == 2, out.output
        assert out.output.startswith(f"Error: {path}, line 1: needs at least one feature")
        assert out.output.rstrip().endswith(hint), out.output
    path = tmp_path / "mixed.csv"  # two ','-fields, one of them holding a ';'
    path.write_text("a,b,y\n1;2,3,0\n4;5,6,1\n")
    out = CliRunner().invoke(main, ["select", str(path), "-a", "saola"])
    assert out.exit_code == 2 and "not a number: '1;2'; it holds ';'" in out.output


def test_a_text_column_says_the_last_was_taken_as_the_label_by_default(tmp_path):
    """Without --label the last column is the label: a label column elsewhere is read as a
    feature, and its "not a number" alone did not say why."""
    import pandas as pd

    path = _bc_csv(tmp_path)
    frame = pd.read_csv(path)
    frame.insert(3, "class", frame.pop("class"))
    frame.to_csv(path, index=False)
    frame.to_parquet(tmp_path / "bc.parquet")
    note = ("; the last column, 30 ('worst fractal dimension'), was taken as the label because "
            "no --label was given: name the label with --label")
    for source, error in ((path, "line 2, column 3 ('class'): not a number: 'malignant'"),
                          (tmp_path / "bc.parquet", "column 3 ('class'): not numeric")):
        out = CliRunner().invoke(main, ["select", str(source), "-a", "saola"])
        assert out.exit_code == 2 and error in out.output, out.output
        assert out.output.rstrip().endswith(note), out.output
    path.write_text("a,class,b\n1,x,oops\n2,y,3\n")
    out = CliRunner().invoke(main, ["select", str(path), "-a", "saola", "--label", "class"])
    assert out.exit_code == 2 and out.output.rstrip().endswith("not a number: 'oops'")  # given


def test_a_label_error_says_the_last_column_was_taken_without_label(tmp_path):
    """Without --label the last column is the label: a label error (continuous values, a
    missing label, a single class) said nothing of it, so the fix (--label) was not in sight."""
    import pandas as pd

    rng = np.random.default_rng(2)
    frame = pd.DataFrame(rng.normal(size=(30, 3)), columns=["a", "class", "b"])
    frame["class"] = np.arange(30) % 2
    frame.to_csv(tmp_path / "d.csv", index=False)
    frame.to_parquet(tmp_path / "d.parquet")
    np.save(tmp_path / "d.npy", frame.to_numpy())
    frame.assign(b=[np.nan] + [1.0] * 29).to_parquet(tmp_path / "missing.parquet")
    note = ("; the last column, 2{}, was taken as the label because no --label was given: "
            "name the label with --label\n")
    for source, algorithm, error, name in (
            ("d.csv", "kofsd", "kofsd takes class labels, not continuous values", " ('b')"),
            ("d.parquet", "ofs", "ofs is a binary classifier: the labels have 30 classes", " ('b')"),
            ("d.npy", "kofsd", "kofsd takes class labels, not continuous values", ""),
            ("missing.parquet", "saola", "the labels contain NaN (1 of 30)", " ('b')")):
        path = tmp_path / source
        out = CliRunner().invoke(main, ["select", str(path), "-a", algorithm])
        assert out.exit_code == 2, out.output
        assert out.output.startswith(f"Error: {path}: {error}"), out.output
        assert out.output.endswith(note.format(name)), out.output
        assert out.output.count("\n") == 1  # one line
    for args in (["--label", "b"], ["--label", "2"]):  # given: no note
        out = CliRunner().invoke(main, ["select", str(tmp_path / "d.csv"), "-a", "kofsd", *args])
        assert out.exit_code == 2 and "continuous values" in out.output, out.output
        assert "was taken as the label" not in out.output
    np.savez(tmp_path / "d.npz", X=frame.to_numpy()[:, :2], y=frame["b"].to_numpy())
    out = CliRunner().invoke(main, ["select", str(tmp_path / "d.npz"), "-a", "kofsd"])
    assert out.exit_code == 2 and "continuous values" in out.output, out.output
    assert "was taken as the label" not in out.output  # its labels are an array of their own


def test_a_bracketed_list_of_bare_words_is_a_list_of_texts(tmp_path):
    """`-p classes=[benign,malignant]`, as the README writes it (the shell eats the quotes of
    the JSON form), is the list of two texts, in select as in evaluate; numbers stay numbers."""
    from streamfs.cli.params import _parse_params
    from streamfs.evaluation.runner import parse_params

    path = _bc_csv(tmp_path)
    for classes in ("[benign,malignant]", '["benign","malignant"]', "[ benign, 'malignant' ]"):
        out = CliRunner().invoke(main, ["select", str(path), "--label", "class", "-a", "ofs",
                                        "-p", f"classes={classes}", "--json"])
        assert out.exit_code == 0, out.output
        assert json.loads(out.stdout)["params"]["classes"] == ["benign", "malignant"]
    assert _parse_params(("classes=[0,1]", "x=[a,1.5,null]")) == {"classes": [0, 1],
                                                                  "x": ["a", 1.5, None]}
    assert parse_params(["ofs"], ["classes=[a,b]"]) == {"ofs": {"classes": ["a", "b"]}}


def test_a_selector_s_warning_is_one_line_without_python_s_source(tmp_path):
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)  # three classes: SAOLA's Fisher z warns
    np.savez(tmp_path / "wine.npz", X=X, y=y)
    out = subprocess.run([sys.executable, "-m", "streamfs.cli", "select",
                          str(tmp_path / "wine.npz"), "-a", "saola"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert ("WARNING streamfs: SAOLA(test='fisher_z') correlates the features with the class as "
            "a number") in out.stderr
    assert "UserWarning" not in out.stderr and ".py:" not in out.stderr, out.stderr


def test_select_reads_libsvm_as_produce_does(tmp_path):
    """--zero-based/--one-based and --n-features, as produce takes them: a 0-based file in which
    no index 0 occurs is read as 1-based unless told, so select could not give the worker's
    result for a stream produced with --zero-based."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 4)) * (rng.random((200, 4)) < 0.7)
    y = np.where(X[:, 0] + X[:, 2] > 0, 1, -1)
    path = tmp_path / "d.svm"
    lines = (f"{t} " + " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(row) if v)
             for row, t in zip(X, y))
    path.write_text("".join(line + "\n" for line in lines))

    def select(*flags: str) -> list:
        out = CliRunner().invoke(main, ["select", str(path), "-a", "ofs", "-p",
                                        "n_features_to_select=2", "--json", *flags])
        assert out.exit_code == 0, out.output
        return [(i["feature"], i["name"]) for i in json.loads(out.stdout)["selection"]]

    one = select()
    assert select("--zero-based") == [(f + 1, name) for f, name in one]
    assert select("--zero-based", "--n-features", "6") == select("--zero-based")


def test_a_label_problem_names_the_file_a_parameter_problem_does_not(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("1 1:0.5\n-1 2:1.5\nnan 1:2\n1 2:1\n-1 1:1\n")
    out = CliRunner().invoke(main, ["select", str(path), "-a", "ofs"])
    assert out.exit_code == 2
    assert out.output == (f"Error: {path}: the labels contain NaN (1 of 5); every instance "
                          "needs a class\n")
    out = CliRunner().invoke(main, ["select", str(path), "-a", "ofs", "-p", "eta=-1"])
    assert out.exit_code == 2 and out.output.startswith("Error: eta must be"), out.output


def test_input_the_worker_would_dead_letter_is_reported_once(tmp_path):
    """An open the worker's processor refuses (a max_buffer_bytes over its cap, which only the
    worker checks) was printed twice: the processor's dead-letter log line, then the error."""
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "d.npz", X=rng.normal(size=(40, 3)), y=np.arange(40) % 2)
    out = subprocess.run([sys.executable, "-m", "streamfs.cli", "select", str(tmp_path / "d.npz"),
                          "-a", "kofsd", "-p", "max_buffer_bytes=2000000000"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr
    reason = "max_buffer_bytes=2000000000 exceeds this worker's cap of 1073741824 bytes"
    assert out.stderr.count(reason) == 1, out.stderr
    assert out.stderr.startswith(f"Error: {reason}"), out.stderr


def test_python_spellings_of_true_false_none_are_parameter_values(tmp_path):
    # the README gives parameters in Python (normalize=False, random_state=None): typed so after
    # -p they were texts, and refused
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4))
    path = tmp_path / "four.npz"
    np.savez(path, X=X, y=(X[:, 1] > 0).astype(int))
    results = {}
    for spelled in (["normalize=False", "random_state=None"],
                    ["normalize=false", "random_state=null"]):
        args = ["select", str(path), "-a", "ofs-rand", "--json", "-p", "n_features_to_select=2"]
        out = CliRunner().invoke(main, [*args, *(a for p in spelled for a in ("-p", p))])
        assert out.exit_code == 0, out.output
        results[spelled[0]] = json.loads(out.stdout.splitlines()[0])
    assert results["normalize=False"] == results["normalize=false"]


def test_select_and_evaluate_read_a_parameter_value_alike(tmp_path):
    """`-p alpha=.05` was refused by select ("alpha must be a number in (0, 1), got '.05'")
    and taken by evaluate; `compat=none` the other way round."""
    from streamfs.evaluation.runner import parse_params

    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 6))
    path = tmp_path / "six.npz"
    np.savez(path, X=X, y=(X[:, 1] + X[:, 4] > 0).astype(int))
    chosen = {}
    for spelled in ("alpha=.05", "alpha=0.05", "alpha=+5e-2"):
        out = CliRunner().invoke(main, ["select", str(path), "-a", "saola", "--json", "-p",
                                        spelled, "-p", "compat=none"])
        assert out.exit_code == 0, out.output
        final = json.loads(out.stdout.splitlines()[0])
        assert final["params"]["alpha"] == 0.05
        chosen[spelled] = final["selection"]
        assert parse_params(["saola"], [spelled, "compat=none"]) == {
            "saola": {"alpha": 0.05, "compat": None}}
    assert chosen["alpha=.05"] == chosen["alpha=0.05"] == chosen["alpha=+5e-2"]
    out = CliRunner().invoke(main, ["select", str(path), "-a", "saola", "-p", "=3"])
    assert out.exit_code == 2 and "expected key=value, got '=3' (no key)" in out.output


@pytest.mark.parametrize("as_json", [False, True])
def test_output_into_a_pipe_closed_early_exits_141(tmp_path, as_json):
    """`streamfs select ... | head -0`: a table written into the closed pipe exited 1 (rich's
    ``Console.on_broken_pipe``), which reads as an error; --json exited 141 already."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3))
    path = tmp_path / "three.npz"
    np.savez(path, X=X, y=(X[:, 0] > 0).astype(int))
    proc = subprocess.Popen([sys.executable, "-m", "streamfs.cli", "select", str(path), "-a",
                             "saola", *(["--json"] if as_json else [])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # the reader goes before the first line: that write meets EPIPE
    stderr = proc.stderr.read()
    assert proc.wait(timeout=120) == 141, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("as_json", [False, True])
def test_output_to_a_full_disk_is_one_line(tmp_path, as_json):
    """`streamfs select ... > /dev/full` printed a 30-line traceback ending in ENOSPC."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3))
    path = tmp_path / "three.npz"
    np.savez(path, X=X, y=(X[:, 0] > 0).astype(int))
    with open("/dev/full", "w") as full:
        out = subprocess.run([sys.executable, "-m", "streamfs.cli", "select", str(path), "-a",
                              "saola", *(["--json"] if as_json else [])],
                             stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr and "Exception ignored" not in out.stderr, out.stderr
    assert out.stderr.splitlines()[-1] == \
        "Error: cannot write the output: [Errno 28] No space left on device", out.stderr


def test_a_guessed_label_that_looks_wrong_is_warned_of(tmp_path):
    """Without --label the last column is the label. SAOLA's Fisher z takes a measurement as
    its label without a word: a file whose label column came first, or had none, gave a
    selection against its last feature, exit 0, nothing said."""
    import pandas as pd

    def select(*args: str) -> str:
        out = subprocess.run([sys.executable, "-m", "streamfs", "select", *args, "-a", "saola"],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stderr

    frame = pd.read_csv(_bc_csv(tmp_path))
    frame["class"] = (frame.pop("class") == "malignant").astype(int)
    note = ("the last column, {}, was taken as the label because no --label was given ({}): "
            "name the label with --label")
    cases = {"first.csv": (frame[["class", *frame.columns[:-1]]],
                           "its values are not whole numbers: {} distinct; column 'class' is "
                           "read as a feature"),
             "none.csv": (frame.drop(columns="class"), "its values are not whole numbers: {} "
                                                        "distinct")}
    for name, (data, why) in cases.items():
        data.to_csv(tmp_path / name, index=False)
        last = data.columns[-1]
        said = note.format(f"{data.shape[1] - 1} ({last!r})",
                           why.format(data[last].nunique()))
        stderr = select(str(tmp_path / name))
        assert f"{tmp_path / name}: {said}" in stderr, stderr
    # the label named, or the last column a label: nothing said
    frame.to_csv(tmp_path / "last.csv", index=False)
    for args in ([str(tmp_path / "first.csv"), "--label", "class"], [str(tmp_path / "last.csv")]):
        stderr = select(*args)
        assert "was taken as the label" not in stderr, stderr


def test_a_row_id_read_as_a_feature_is_warned_of_and_drop_leaves_it_out(tmp_path):
    """A CSV laid out as Kaggle's breast cancer one (`id`, `diagnosis`, then measurements):
    with --label diagnosis, the id was read as a feature without a word, and selected. It is
    warned of now, and --drop id gives the selection of the file without it."""
    import pandas as pd

    frame = pd.read_csv(_bc_csv(tmp_path))
    plain = tmp_path / "plain.csv"
    frame.to_csv(plain, index=False)
    frame.insert(0, "diagnosis", frame.pop("class"))
    frame.insert(0, "id", np.arange(len(frame)) * 7 + 842302)  # in the order collected
    path = tmp_path / "kaggle.csv"
    frame.to_csv(path, index=False)

    def select(source, *args: str) -> tuple[dict, str]:
        out = subprocess.run([sys.executable, "-m", "streamfs", "select", str(source), "-a",
                              "saola", "--json", *args],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout), out.stderr

    with_id, stderr = select(path, "--label", "diagnosis")
    assert (f"{path}: column 'id' (feature 0) looks like a row id, not a measurement: 569 "
            "distinct whole numbers, one per row; it is read as a feature and may be selected: "
            "leave it out with --drop id") in stderr, stderr
    assert "id" in [i["name"] for i in with_id["selection"]]  # why it matters
    dropped, stderr = select(path, "--label", "diagnosis", "--drop", "id")
    assert "row id" not in stderr, stderr
    reference, _ = select(plain)
    assert dropped["selection"] == reference["selection"] and dropped["selection"]


def test_an_n_features_other_than_the_data_is_refused_not_replaced(tmp_path):
    """`-p n_features=10` on 30 features ran with d = 30, silently, while the estimator refuses
    the mismatch (OFS(n_features=10).fit on 30 columns); the data's own d is accepted."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 30))
    path = tmp_path / "thirty.npz"
    np.savez(path, X=X, y=(X[:, 0] > 0).astype(int))
    out = CliRunner().invoke(main, ["select", str(path), "-a", "ofs", "-p", "n_features=10"])
    assert out.exit_code == 2
    assert out.output == ("Error: n_features=10 but the instances have d = 30 features: a "
                          "stream's d is its data's (leave n_features out)\n")
    out = CliRunner().invoke(main, ["select", str(path), "-a", "ofs", "-p", "n_features=30",
                                    "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout.splitlines()[0])["params"]["n_features"] == 30


def test_a_table_shows_its_first_rows_and_says_how_many_more(tmp_path, monkeypatch):
    """A selection of 100,000 features took rich 50 s to draw (and `watch --timeout` ran out
    meanwhile); the table stops at TABLE_ROWS rows and says how many it leaves to --json."""
    from streamfs.cli import output

    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 6))
    path = tmp_path / "six.npz"
    np.savez(path, X=X, y=(X[:, 0] + X[:, 1] > 0).astype(int))
    args = ["select", str(path), "-a", "ofs", "-p", "n_features_to_select=6", "-p",
            "normalize=False"]
    full = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout.splitlines()[0])
    n = len(full["selection"])
    assert n > 2
    monkeypatch.setattr(output, "TABLE_ROWS", 2)
    out = CliRunner().invoke(main, args, env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    rows = [line for line in out.stdout.splitlines() if line.startswith("│")]
    assert [int(r.split("│")[2]) for r in rows] == [s["feature"] for s in full["selection"][:2]]
    assert f"... and {n - 2} more selected features (--json lists every one)" in out.stdout


def test_feature_names_print_as_they_are_not_as_markup(tmp_path):
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame
    names = {c: f"{c} [mg/L]" for c in frame.columns[:-1]}
    names[frame.columns[21]] = "x [/]"  # a closing tag with nothing to close: MarkupError
    path = tmp_path / "units.csv"
    frame.rename(columns=names).to_csv(path, index=False)
    out = CliRunner().invoke(main, ["select", str(path), "-a", "saola", "--label", "target"])
    assert out.exit_code == 0, out.output
    assert "x [/]" in out.output and "[mg/L]" in out.output


def test_a_libsvm_file_s_bad_value_is_named_by_its_index_as_written(tmp_path):
    path = tmp_path / "nan.svm"  # 1-based: column 1 is feature 2
    path.write_text("1 1:0.5 2:1\n-1 1:0.25 2:nan\n1 2:3\n-1 1:1\n1 1:2 2:1\n-1 2:0.5\n")
    out = CliRunner().invoke(main, ["select", str(path), "-a", "saola"])
    assert out.exit_code == 2
    assert "X contains NaN or infinite values in columns [1] ('2')" in out.output


def test_data_beyond_any_memory_is_one_line_and_exit_71(tmp_path):
    # 10**15 features: 8 PB for one array, beyond any address space (overcommit or not)
    path = tmp_path / "huge.svm"
    path.write_text("1 1:1 1000000000000000:1\n-1 2:1\n1 1:0.5\n-1 2:0.3\n")
    out = CliRunner().invoke(main, ["select", str(path), "-a", "saola"])
    assert out.exit_code == 71, out.output
    assert out.output.startswith("Error: out of memory: Unable to allocate ")
    assert "Traceback" not in out.output and len(out.output.splitlines()) == 1


def test_a_text_array_names_the_file(tmp_path):
    path = tmp_path / "text.npz"
    np.savez(path, X=np.array([["1", "2"], ["3", "4"], ["5", "6"], ["7", "9"]]), y=[0, 1, 0, 1])
    out = CliRunner().invoke(main, ["select", str(path), "-a", "saola"])
    assert out.exit_code == 2
    assert out.output.startswith(f"Error: {path}: X has dtype <U1: only bool, integer and float")


@pytest.mark.parametrize("data,args,said", [
    ("d.csv", ["--n-features", "5"], "--n-features applies to LIBSVM files"),
    ("d.csv", ["--zero-based"], "--zero-based/--one-based applies to LIBSVM files"),
    ("d.csv", ["--one-based"], "--zero-based/--one-based applies to LIBSVM files"),
    ("d.svm", ["--header"], "--header/--no-header applies to CSV/TSV files; .svm files"),
    ("d.npz", ["--no-header"], "--header/--no-header applies to CSV/TSV files; .npz files"),
])
def test_an_option_the_file_s_format_does_not_read_is_refused(tmp_path, data, args, said):
    """`--label` and `--drop` on a LIBSVM file were refused, but `--n-features` or
    `--zero-based` on a CSV file and `--header` on others were ignored without a word."""
    from streamfs.producers.files import load_file
    from streamfs.producers.errors import InputFileError

    (tmp_path / "d.csv").write_text("a,b,y\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n")
    (tmp_path / "d.svm").write_text("1 1:0.5 2:1\n0 1:0.2\n1 2:0.1\n0 1:0.9\n")
    np.savez(tmp_path / "d.npz", X=np.eye(4), y=[0, 1, 0, 1])
    algorithm = "ofs" if data == "d.svm" else "saola"
    out = CliRunner().invoke(main, ["select", str(tmp_path / data), "-a", algorithm, *args])
    assert out.exit_code == 2 and said in out.output, out.output
    option = {"--n-features": {"n_features": 5}, "--zero-based": {"zero_based": True},
              "--one-based": {"zero_based": False}, "--header": {"header": True},
              "--no-header": {"header": False}}[args[0]]
    with pytest.raises(InputFileError, match=said.split(";")[0]):
        load_file(tmp_path / data, **option)


def test_select_runs_the_columns_in_produce_s_shuffled_order(tmp_path):
    """`produce --shuffle-seed` sends the columns in a seeded order, on which SAOLA's
    selection depends; select had no way to reproduce it."""
    from sklearn.datasets import load_breast_cancer

    from streamfs.algorithms.saola import SAOLA
    from streamfs.producers.blocks import feature_order

    X, y = load_breast_cancer(return_X_y=True)

    def selected(*args: str) -> list[int]:
        out = CliRunner().invoke(main, ["select", "sklearn:breast_cancer", "-a", "saola",
                                        "--json", *args])
        assert out.exit_code == 0, out.output
        return [item["feature"] for item in json.loads(out.stdout)["selection"]]

    order = feature_order(X.shape[1], None, 3)[0]
    expected = SAOLA().fit(X[:, order], y).selected_
    assert selected("--shuffle-seed", "3") == [int(order[i]) for i in expected]
    assert selected() == SAOLA().fit(X, y).selected_.tolist()
    assert selected("--shuffle-seed", "3") != selected()  # here the order changes it
    out = CliRunner().invoke(main, ["select", "sklearn:breast_cancer", "-a", "ofs",
                                    "--shuffle-seed", "3"])
    assert out.exit_code == 2 and "--shuffle-seed applies to feature streams only" in out.output
