"""Refusals that name a parameter of the Python API name the command line's option instead
when the command line made them (no broker: each is refused before Kafka is asked)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from streamfs.cli import main
from streamfs.producers.checks import check_block_bytes
from streamfs.producers.files import read_libsvm

ZERO_BASED = "0 0:1 2:1\n1 1:1 3:0.5\n0 0:0.2 3:1\n1 2:1 1:0.3\n"


@pytest.mark.parametrize("command", [["select"], ["produce", "instances"]])
def test_a_zero_based_file_read_one_based_names_the_option(tmp_path, command):
    path = tmp_path / "z.svm"
    path.write_text(ZERO_BASED)
    algorithm = "saola" if command == ["select"] else "ofs"
    out = CliRunner().invoke(main, [*command, str(path), "-a", algorithm, "--one-based",
                                    *(["--stream", "s"] if "produce" in command else [])])
    assert out.exit_code == 2, out.output
    assert out.output.strip() == (f"Error: {path}, line 1: feature index 0 < 1 in '0:1' (the "
                                  "file looks 0-based: read it with --zero-based, or without "
                                  "--one-based)")
    with pytest.raises(ValueError) as python:  # the Python API names its parameter
        read_libsvm(path, zero_based=False)
    assert str(python.value).endswith("(the file looks 0-based: read it with zero_based=True "
                                      "or 'auto')")


def test_a_block_budget_over_the_record_limit_names_the_option(tmp_path):
    path = tmp_path / "d.npz"
    np.savez(path, X=np.zeros((4, 2)), y=[0, 1, 0, 1])
    out = CliRunner().invoke(main, ["produce", "features", str(path), "-a", "saola",
                                    "--stream", "s", "--block-bytes", "99999999999"],
                             env={"STREAMFS_MAX_MESSAGE_BYTES": "1048576"})
    assert out.exit_code == 2, out.output
    assert out.output.strip() == ("Error: --block-bytes must be between 1 and the record limit "
                                  "of 1048576 bytes, got 99999999999")
    with pytest.raises(ValueError, match=r"^block_bytes must be between 1 and the record "
                                         r"limit of 1048576 bytes, got 99999999999$"):
        check_block_bytes(99999999999, 1048576)
