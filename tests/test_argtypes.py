"""The module entry points (python -m streamfs.bench.*, streamfs.evaluation.all): a mistake in
the command is one line and exit 2 before anything runs, a stop one line and 128 + signal."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module,args,said", [
    ("bench.saola", ["--repeats", "0"], "--repeats: must be a whole number of at least 1"),
    ("bench.saola", ["--tests", "bogus"], "--tests: unknown test 'bogus'"),
    ("bench.saola", ["--seed", "-1"], "--seed: must be a whole number of at least 0"),
    ("bench.saola", ["--only", "datasets", "--datasets", "nosuch"],
     "--datasets: unknown dataset 'nosuch'"),
    ("bench.kofsd", ["--synthetic-p", "-5"], "--synthetic-p: must be a whole number"),
    ("bench.kofsd", ["--datasets", "nosuch"], "--datasets: unknown dataset 'nosuch'"),
    ("bench.ofs", ["--mistakes", "--partial-budget", "2.5"], "each budget must be a fraction"),
    ("bench.ofs", ["--permutations", "0"], "--permutations: must be a whole number"),
    ("bench.gdm", ["synthetic", "--m", "100"], "--m: at least 320 features"),
    ("bench.gdm", ["digits", "--tau", "nan"], "--tau: must be a finite number above 0"),
    ("bench.gdm", ["digits", "--pair", "3", "42"], "--pair: two different digits"),
    ("evaluation.all", ["--timeout", "-5"], "--timeout: must be a finite number above 0"),
    ("evaluation.all", ["--datasets", "a,a"], "--datasets: unknown dataset 'a'"),
    ("evaluation.all", ["--algorithms", "saola,saola"], "--algorithms: 'saola' given twice"),
])
def test_a_mistake_in_the_command_is_one_line_and_exit_2(module, args, said, tmp_path,
                                                          monkeypatch):
    """They were tracebacks (exit 1), after minutes of runs for bench.ofs's --partial-budget,
    or silently ran something else (--timeout -5, --repeats 0, an unknown dataset skipped)."""
    monkeypatch.chdir(tmp_path)  # nothing of a run that should not start lands in the tree
    out = subprocess.run([sys.executable, "-m", f"streamfs.{module}", *args], text=True,
                         capture_output=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert said in out.stderr.strip().splitlines()[-1] and "Traceback" not in out.stderr
    assert out.stdout == ""


@pytest.mark.parametrize("signame,code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_stop_is_one_line_and_128_plus_the_signal(signame, code):
    script = ("import os, signal\n"
              "from streamfs.argtypes import run_module\n"
              "def main():\n"
              f"    os.kill(os.getpid(), signal.{signame})\n"
              "    sum(range(10**6))\n"
              "    return 0\n"
              "run_module(main)\n")
    out = subprocess.run([sys.executable, "-c", script], text=True, capture_output=True,
                         timeout=60)
    assert out.returncode == code and out.stderr == "interrupted\n", out.stderr
