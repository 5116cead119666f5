"""`streamfs produce` input refused in one line naming the file, line or option, before any
broker is contacted: text that is not UTF-8 (a data file, a groups file, a stream id), an empty
group, a --rate that is not a finite number (inf was an OverflowError traceback)."""

import numpy as np
import pytest
from click.testing import CliRunner

from streamfs.cli import main
from streamfs.producers.publish import items_per_message



def _produce(*args):
    return CliRunner().invoke(main, ["-b", "127.0.0.1:1", "produce", *map(str, args),
                                     "--no-progress"])


@pytest.mark.parametrize("kind", ["features", "instances"])
def test_a_csv_that_is_not_utf8_is_named_with_its_line(tmp_path, kind):
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"a,b,y\n1,2,x\n2,3,caf\xe9\n3,1,x\n4,4,caf\xe9\n")
    result = _produce(kind, path, "--stream", "s", "-a", "saola" if kind == "features" else "ofs")
    assert result.exit_code == 2, result.output
    assert f"{path}, line 3: not UTF-8 text (byte 0xe9, byte 8 of the line)" in result.output


@pytest.mark.parametrize("body,needle", [
    (b"[[0, 1], [2]]\xff", "not a JSON file of groups (byte 0xff at offset 13"),
    (b"[[0, 1, 2], []]", "group 1 is empty"),
])
def test_a_bad_groups_file_is_named(tmp_path, body, needle):
    data = tmp_path / "d.npz"
    rng = np.random.default_rng(0)
    np.savez(data, X=rng.normal(size=(20, 3)), y=np.tile([0, 1], 10))
    groups = tmp_path / "groups.json"
    groups.write_bytes(body)
    result = _produce("features", data, "--stream", "s", "-a", "group-saola", "--groups", groups)
    assert result.exit_code == 2, result.output
    assert f"{groups}: {needle}" in result.output


def test_a_stream_id_that_is_not_utf8_is_refused_naming_the_option(tmp_path):
    result = _produce("features", tmp_path / "missing.npz", "--stream", "ab\udcff", "-a", "saola")
    assert result.exit_code == 2, result.output
    assert "--stream: the stream id 'ab\\udcff' is not valid Unicode text" in result.output


# ---------------------------------------------------------------- --rate


@pytest.mark.parametrize("rate", ["inf", "nan"])
def test_cli_refuses_a_rate_that_is_not_finite(tmp_path, rate):
    path = tmp_path / "d.npz"
    rng = np.random.default_rng(0)
    np.savez(path, X=rng.normal(size=(20, 3)), y=np.tile([0, 1], 10))
    result = CliRunner().invoke(main, ["-b", "127.0.0.1:1", "produce", "features", str(path),
                                       "--stream", "s", "-a", "saola", "--rate", rate,
                                       "--no-progress"])
    assert result.exit_code == 2, result.output
    assert "--rate" in result.output and "finite" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize("rate", [float("inf"), float("nan"), 0, -1.0])
def test_api_refuses_a_rate_that_is_not_finite(rate):
    with pytest.raises(ValueError, match="rate must be a finite number"):
        items_per_message(rate)


def test_a_lower_worker_cap_bounds_a_stream_that_sets_no_buffer(tmp_path, monkeypatch):
    # the algorithms' 1 GiB default went past it: the worker would have run the stream
    monkeypatch.setenv("STREAMFS_MAX_BUFFER_BYTES", "100000")
    path = tmp_path / "k.npz"
    np.savez(path, X=np.random.default_rng(0).normal(size=(120, 5)), y=np.tile([0, 1], 60))
    result = _produce("features", path, "--stream", "s", "-a", "kofsd")
    assert result.exit_code == 2, result.output
    assert "exceed max_buffer_bytes=100000; use at most N = 71 instances" in result.output
    assert "this worker's cap on max_buffer_bytes, STREAMFS_MAX_BUFFER_BYTES, is 100000 bytes" \
        in result.output
