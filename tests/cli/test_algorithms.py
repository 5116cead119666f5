"""`streamfs algorithms`: the registry's algorithms, and each one's parameters with their
defaults and meanings, read from the estimators' docstrings."""

from __future__ import annotations

import inspect

import pytest
from click.testing import CliRunner

from streamfs.algorithms import registry
from streamfs.cli import main
from streamfs.cli.algorithms import _as_param
from streamfs.cli.params import param_value


def test_the_list_names_every_algorithm_with_its_kind():
    out = CliRunner().invoke(main, ["algorithms"])
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())  # the summaries wrap
    for spec in registry.ALGORITHMS.values():
        assert f"{spec.name} ({spec.kind[:-1]} streams) {spec.summary}" in text


@pytest.mark.parametrize("name", sorted(registry.ALGORITHMS))
def test_every_parameter_an_algorithm_accepts_is_listed_with_its_default_and_meaning(name):
    spec = registry.ALGORITHMS[name]
    out = CliRunner().invoke(main, ["algorithms", name])
    assert out.exit_code == 0, out.output
    rows = {line.split()[0]: line.split(None, 1)[1:] for line in out.output.splitlines()
            if line.startswith("  ") and not line[2].isspace()}  # not a wrapped meaning
    signature = inspect.signature(spec.load().__init__).parameters
    for key in spec.allowed_params():
        default = signature[key].default
        assert default is not inspect.Parameter.empty, key  # an `open` may leave it out
        shown = f"{key}={_as_param(default)}"
        assert shown in rows, (shown, out.output)
        assert param_value(_as_param(default)) == default  # what -p would take back
        assert rows[shown] and rows[shown][0] != "(not described)", (key, out.output)
    assert len(rows) == len(spec.allowed_params())  # nothing the registry would refuse


def test_an_unknown_name_is_refused_with_a_suggestion():
    out = CliRunner().invoke(main, ["algorithms", "saol"])
    assert out.exit_code == 2
    assert "unknown algorithm 'saol' (did you mean 'saola'?)" in out.output


def test_python_dash_m_streamfs_is_the_command():
    # `python -m streamfs` said "No module named streamfs.__main__"
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "streamfs", "algorithms"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("saola "), out.stderr
    out = subprocess.run([sys.executable, "-m", "streamfs", "nosuch"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2 and "Usage: streamfs " in out.stderr, out.stderr


def test_a_parameter_s_values_are_listed_not_only_its_first_sentence():
    """`algorithms saola` never said test takes "mi" nor bound "max", `algorithms ofs-partial`
    not which normalize values it takes, and group-saola not that it needs --groups: the
    docstrings' type lines were dropped and the meaning cut at its first full stop."""
    def rows(name: str) -> str:
        out = CliRunner().invoke(main, ["algorithms", name])
        assert out.exit_code == 0, out.output
        return " ".join(out.output.split())  # the meanings wrap

    saola = rows("saola")
    assert 'test=fisher_z ({"fisher_z", "mi"}) "fisher_z" for continuous data' in saola
    assert 'bound=min ({"min", "max"}) ' in saola
    assert "alpha=0.01 (float) Significance level" in saola
    partial = rows("ofs-partial")
    assert '(bool or {"l2", "standardize"}) Scaling of each instance: True or "l2" (full ' \
        'input only)' in partial and 'False (or None, "none"; text in any case) takes it as ' \
        'given' in partial
    for name in ("ofs", "saola", "kofsd", "gdm"):
        assert ", default" not in rows(name)  # the listing shows the default after =
    assert rows("group-saola").startswith("group-saola (feature streams): group-SAOLA: "
                                          "features arrive in groups (--groups FILE)")
