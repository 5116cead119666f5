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
