"""Evaluate SAOLA, K-OFSD and OFS on every dataset of ``$STREAMFS_DATASETS``.

    python -m streamfs.evaluation.all --out out/eval [--jobs 2] [--datasets a,b] [--timeout 300]

Each dataset runs in its own process (``streamfs evaluate`` with all the algorithms and the
defaults below) under a hard ``--timeout``; if that fails, each algorithm runs alone under the
same timeout, and a pair that still exceeds it is reported as such; datasets of more than
2*10^7 cells (dorothea) run each algorithm separately from the start. Results go to
``OUT/<dataset>[.<algorithm>].json`` (JSON lines, one per algorithm: read them with
:func:`streamfs.evaluation.report.load_results`) and the table to ``OUT/README.md``,
rewritten after every finished dataset. Ctrl-C (or SIGTERM) stops the runs at once and
leaves the table of the datasets done (exit 130, 143); the exit is 1 when a run failed or
timed out, 2 for a mistake in the command.

Defaults, chosen so that the whole run fits in well under an hour on two cores:

* 5 repeated stratified 70/30 splits, 5 stability runs on 4/5 subsamples (SU weights),
  10 random orders for OFS's online mistake rate (on all instances);
* at most 2000 instances per dataset (stratified subsample; K-OFSD costs O(N^2) per
  dependency evaluation), the online mistake rate excepted;
* SelectKBest's mutual-information baseline on continuous data cut into 5 equal-frequency
  bins (the k-NN estimator takes minutes on the microarray sets);
* a time budget of 40 s per loop (splits, stability runs, orders): no new split starts after
  it, at least one split and two stability runs always complete;
* algorithm defaults (SAOLA ``alpha=0.01``, Fisher's z on continuous data and ``test="mi"``
  on discrete data, i.e. integer values with fewer than 10 states per column; K-OFSD ``k=7,
  alpha=0.5``, smallest class vs rest on multi-class data; OFS ``B = round(0.1 d)``,
  ``eta=0.2, lam=0.01``, L2-normalised instances, largest class vs rest on multi-class data).
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from streamfs.argtypes import dataset_names, known_names, positive_int, positive_number
from streamfs.broker import interrupting_signal, remember_interrupts

from .report import COLUMNS, load_results, markdown_table, rows

ALGORITHMS = ("saola", "kofsd", "ofs")
ARGS = ["--repeats", "5", "--stability-runs", "5", "--permutations", "10",
        "--max-instances", "2000", "--time-budget", "40", "--mi-bins", "5"]
#: set once the user stopped the run: no new child starts, no failed one is retried
_STOPPING = threading.Event()
#: the children running now, to stop with the run
_CHILDREN: set[subprocess.Popen] = set()
_CHILDREN_LOCK = threading.Lock()


def command(dataset: str, algorithms: list[str], out: Path) -> list[str]:
    """The ``streamfs evaluate`` command line of one dataset (run as a module)."""
    name = dataset if len(algorithms) > 1 else f"{dataset}.{algorithms[0]}"
    algos = [x for a in algorithms for x in ("-a", a)]
    return [sys.executable, "-m", "streamfs.evaluation.command", dataset, *algos, *ARGS,
            "--json", str(out / f"{name}.json")]


SEPARATE_ABOVE = 20_000_000  # instances x features


def _size(dataset: str) -> int:
    from streamfs.datasets import load

    X, _ = load(dataset)
    return X.shape[0] * X.shape[1]


def _run(cmd: list[str], timeout: float) -> str:
    """Run ``cmd``: "ok", "timeout after N s", "interrupted" or "error: <its error line>".
    In a session of its own, so that a Ctrl-C at the terminal reaches this process only,
    which stops every child itself (a child left behind by a SIGTERM ran on, its timeout
    no longer enforced)."""
    with _CHILDREN_LOCK:  # a stop comes before this child (none starts) or after (killed)
        if _STOPPING.is_set():
            return "interrupted"
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        _CHILDREN.add(proc)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return f"timeout after {timeout:g} s"
    finally:
        with _CHILDREN_LOCK:
            _CHILDREN.discard(proc)
    if _STOPPING.is_set():
        return "interrupted"
    return "ok" if proc.returncode == 0 else f"error: {_error_line(err, proc.returncode)}"


def _error_line(stderr: str, code: int) -> str:
    r"""What a failed ``streamfs evaluate`` said: its ``Error:`` line (its warnings came first,
    and the reason was cut off behind one), else its last line; one line.

    >>> _error_line("warning: --permutations is ignored\nError: needs the groups\n", 2)
    'needs the groups'
    >>> _error_line("", -9)
    'exit -9'
    """
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line.removeprefix("Error: ") for line in lines if line.startswith("Error: ")]
    return (errors or lines[-1:] or [f"exit {code}"])[-1]


def _stop_children() -> None:
    _STOPPING.set()
    with _CHILDREN_LOCK:
        for proc in _CHILDREN:
            proc.kill()


def run_dataset(dataset: str, algorithms: list[str], out: Path, timeout: float,
                resume: bool = False) -> list[dict]:
    """All algorithms in one process (shared start-up and baseline rankings); if that
    times out or fails, each algorithm alone, so that one slow pair costs only its row.
    With ``resume``, a dataset whose ``OUT/<dataset>.runs.json`` exists is not run again."""
    record = out / f"{dataset}.runs.json"
    if resume and record.is_file():
        runs = json.loads(record.read_text())
        # only runs that finished: a failed or timed-out one (an earlier, shorter --timeout)
        # is run again, not reported under this command
        if [r["algorithm"] for r in runs] == list(algorithms) and all(
                r["status"] == "ok" for r in runs):
            return runs
    runs = _run_dataset(dataset, algorithms, out, timeout)
    if not any(r["status"] == "interrupted" for r in runs):
        record.write_text(json.dumps(runs))
    return runs


def _run_dataset(dataset: str, algorithms: list[str], out: Path, timeout: float) -> list[dict]:
    start = time.perf_counter()
    cmd = command(dataset, algorithms, out)
    # K-OFSD's O(N^2) per feature makes the largest sets (dorothea) likely to time out:
    # there, run the algorithms separately from the start
    status = _run(cmd, timeout) if _size(dataset) <= SEPARATE_ABOVE else "separately"
    wall = time.perf_counter() - start
    if status == "interrupted":
        return [{"dataset": dataset, "algorithm": a, "status": status, "wall": wall,
                 "command": " ".join(cmd[1:])} for a in algorithms]
    if status == "ok":
        res = load_results(out / f"{dataset}.json")
        return [{"dataset": dataset, "algorithm": a, "status": "ok", "wall": wall,
                 "command": " ".join(cmd[1:]), "result": dict(res, algorithms=[entry])}
                for a, entry in zip(algorithms, res["algorithms"])]
    runs = []
    for a in algorithms:
        start = time.perf_counter()
        cmd = command(dataset, [a], out)
        status = _run(cmd, timeout)
        run = {"dataset": dataset, "algorithm": a, "status": status,
               "wall": time.perf_counter() - start, "command": " ".join(cmd[1:])}
        if status == "ok":
            run["result"] = load_results(out / f"{dataset}.{a}.json")
        runs.append(run)
    return runs


def write_readme(out: Path, runs: list[dict], argv: list[str]) -> None:
    header = ["dataset", "N x p (used)", "classes", *COLUMNS, "wall s"]
    body = []
    for run in runs:
        res = run.get("result")
        if res is not None:
            shape = f"{res['n_instances']}x{res['n_features']}"
            body.append([run["dataset"], shape, str(len(res["classes"])), *rows(res)[0],
                         f"{run['wall']:.0f}"])
        else:
            cells = [""] * len(COLUMNS)
            cells[0], cells[1] = run["algorithm"], run["status"][:120].replace("|", "/")
            body.append([run["dataset"], "", "", *cells, f"{run['wall']:.0f}"])
    algorithms = list(dict.fromkeys(r["algorithm"] for r in runs)) or list(ALGORITHMS)
    text = [
        "# streamfs evaluation on the shared datasets",
        "",
        f"Made by `python -m streamfs.evaluation.all {' '.join(argv)}`, which runs per dataset",
        "",
        "    streamfs evaluate DATASET " + " ".join(f"-a {a}" for a in algorithms) + " "
        + " ".join(ARGS),
        "",
        "(each algorithm alone when that exceeds the timeout; `wall s` is then per algorithm, "
        "else for the whole dataset). Columns: mean over the splits done (`splits`) of the "
        "number of selected features, selection time (s, on the training part), redundancy "
        "rate RED, test accuracy / AUC / G-mean of 1-NN, linear SVM and decision tree on the "
        "selected features, and the accuracies of SelectKBest (f_classif, mutual_info_classif "
        "on 5 equal-frequency bins) at the same k; stability: SU-weighted matching similarity "
        "over 4/5 subsamples; mistake rate: OFS's online cumulative mistake rate over random "
        "orders of all instances. Multi-class data: OFS learns the largest class vs the rest, "
        "K-OFSD scores the smallest class vs the rest (`task`). Details: "
        "`python -m streamfs.evaluation.all --help` and the JSON files beside this one.",
        "",
        markdown_table(header, body),
        "",
    ]
    (out / "README.md").write_text("\n".join(text))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m streamfs.evaluation.all",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/eval",
                        help="directory of the results and README.md (default: out/eval)")
    parser.add_argument("--datasets", default=None,
                        help="comma-separated names (default: every dataset of "
                        "$STREAMFS_DATASETS)")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS),
                        help=f"comma-separated (default: {','.join(ALGORITHMS)})")
    parser.add_argument("--jobs", type=positive_int, default=1,
                        help="datasets run at once (default: 1)")
    parser.add_argument("--timeout", type=positive_number, default=300.0,
                        help="seconds per process (default: 300)")
    parser.add_argument("--resume", action="store_true",
                        help="reuse the datasets an earlier run in OUT finished (not those "
                        "that failed or timed out)")
    args = parser.parse_args(argv)
    from streamfs.algorithms import registry
    from streamfs.datasets import available, load

    datasets = dataset_names(parser, "--datasets", available() if args.datasets is None
                             else args.datasets.split(","))
    algos = known_names(parser, "--algorithms", args.algorithms.split(","),
                        list(registry.ALGORITHMS), "algorithm")
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / ".writable").touch()
        (out / ".writable").unlink()
    except OSError as exc:
        parser.error(f"--out {out}: cannot write there: {exc.strerror or exc}")
    size = {}
    for d in datasets:  # small datasets first: most of the table early
        X, _ = load(d)
        size[d] = X.shape[0] * X.shape[1]
    order = sorted(datasets, key=size.get)
    # SIGTERM (`timeout`, a CI's cancel) stops the run as Ctrl-C does
    remember_interrupts(signal.SIGTERM)
    done: dict[str, list] = {}
    runs: list[dict] = []
    pool = ThreadPoolExecutor(args.jobs)
    try:
        futures = {d: pool.submit(run_dataset, d, algos, out, args.timeout, args.resume)
                   for d in order}
        for d in order:
            done[d] = futures[d].result()
            for r in done[d]:
                print(f"{d:>28} {r['algorithm']:>11} {r['status'][:80]} {r['wall']:.0f}s",
                      flush=True)
            runs = [r for x in order if x in done for r in done[x]]
            write_readme(out, runs, argv)
    except KeyboardInterrupt:
        _stop_children()
        pool.shutdown(wait=True, cancel_futures=True)
        finished = [r for r in runs if r["status"] != "interrupted"]
        print(f"interrupted: {len({r['dataset'] for r in finished})} of {len(order)} datasets "
              f"done; their table is {out / 'README.md'}", file=sys.stderr)
        return 128 + interrupting_signal()
    finally:
        pool.shutdown(wait=True)
    (out / "runs.json").write_text(json.dumps(
        [{k: v for k, v in r.items() if k != "result"} for r in runs], indent=1))
    failed = [r for r in runs if r["status"] != "ok"]
    if failed:
        print(f"{len(failed)} of {len(runs)} runs did not finish (see {out / 'README.md'})",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
