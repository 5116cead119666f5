"""Help texts that must stay true to the code (no broker)."""

from __future__ import annotations

import re

from click.testing import CliRunner

from streamfs.algorithms import registry
from streamfs.cli import ALGORITHMS_HELP, main


def test_algorithm_help_lists_every_algorithm_of_the_registry_by_its_stream_kind():
    listed = dict(re.findall(r"((?:[a-z-]+(?:, | or ))*[a-z-]+) \((feature|instance) streams\)",
                             ALGORITHMS_HELP))
    kinds = {name: kind + "s" for names, kind in listed.items()
             for name in re.split(r", | or ", names)}
    assert kinds == {name: spec.kind for name, spec in registry.ALGORITHMS.items()}
    for command in ("select", "produce", "evaluate"):
        out = CliRunner().invoke(main, [command, "--help"]).output
        text = "".join(out.split())  # the help wraps at spaces and after hyphens
        assert "saola,saola-max,group-saolaorkofsd(featurestreams)" in text, command
        assert "ofs,ofs-partial,pe-trun,rand,ofs-rand,pe-randorgdm(instancestreams)" in text, \
            command


def test_watch_refuses_a_timeout_not_above_zero_and_a_run_without_a_stream():
    """Refused before any broker is looked for (none is given here): exit 2, one line."""
    for timeout in ("-1", "0"):
        out = CliRunner().invoke(main, ["-b", "127.0.0.1:1", "watch", "s", "--timeout", timeout])
        assert out.exit_code == 2, out.output
        assert f"Invalid value for '--timeout': {float(timeout)} is not in the range x>0." \
            in out.output
    out = CliRunner().invoke(main, ["-b", "127.0.0.1:1", "watch", "--run", "2"])
    assert out.exit_code == 2, out.output
    assert "Error: --run 2 needs a STREAM: runs are numbered per stream" in out.output
