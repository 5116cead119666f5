"""Help texts that must stay true to the code (no broker)."""

from __future__ import annotations

import re

import pytest

from click.testing import CliRunner

from streamfs.algorithms import registry
from streamfs.cli import main
from streamfs.cli.options import ALGORITHMS_HELP


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


def test_label_help_is_the_same_where_the_same_code_reads_the_label():
    # select and evaluate read a .npy file of labels too: their help said CSV/Parquet only
    for command in ("select", "produce", "evaluate"):
        out = CliRunner().invoke(main, [command, "--help"]).output
        text = " ".join(out.split())
        assert ("--label TEXT Label column (name or index) for CSV/TSV/Parquet/.npy files "
                "(default the last), or a .npy file of labels.") in text, command


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


def test_a_topic_prefix_kafka_would_not_take_is_refused_before_any_broker(monkeypatch):
    """Exit 2 naming the flag or the variable, as the other settings (no broker is given)."""
    out = CliRunner().invoke(main, ["-b", "127.0.0.1:1", "--topic-prefix", "a b.", "watch"])
    assert out.exit_code == 2, out.output
    assert "Invalid value for '--topic-prefix': must be at most 232 characters" in out.output
    monkeypatch.setenv("STREAMFS_TOPIC_PREFIX", "a b.")
    out = CliRunner().invoke(main, ["-b", "127.0.0.1:1", "topics", "create"])
    assert out.exit_code == 2, out.output
    assert out.output.startswith("Error: STREAMFS_TOPIC_PREFIX: must be at most 232 characters")


def test_worker_help_lists_every_setting_with_its_default_and_flag():
    """Generated from the Settings fields: a setting added without words fails here."""
    from dataclasses import fields

    from streamfs.settings import _SECURITY_ENV, DESCRIPTIONS, Settings

    assert set(DESCRIPTIONS) == {f.name for f in fields(Settings)}
    out = CliRunner().invoke(main, ["worker", "--help"], prog_name="streamfs", terminal_width=200)
    assert out.exit_code == 0, out.output
    section = out.output.split("Environment variables")[1]
    rows = dict(re.findall(r"^  (STREAMFS_[A-Z_]+)\s+(.*)$", section, re.MULTILINE))
    expected = {f"STREAMFS_{f.name.upper()}" for f in fields(Settings) if f.name != "security"}
    assert set(rows) == (expected | set(_SECURITY_ENV)
                         | {"STREAMFS_KERNEL_THREADS", "STREAMFS_TOPICS"})
    assert rows["STREAMFS_WEB_HOST"] == ("(--web-host) Address of /health and /metrics; "
                                         "0.0.0.0: every interface. Default: '127.0.0.1'.")
    assert rows["STREAMFS_WEB_PORT"].startswith("(--web-port) ")
    assert rows["STREAMFS_WEB_PORT"].endswith(" Default: 6066.")
    assert rows["STREAMFS_TOPIC_PREFIX"].startswith("(streamfs --topic-prefix) ")
    assert rows["STREAMFS_MAX_MESSAGE_BYTES"].endswith(" Default: 8 MiB.")
    assert rows["STREAMFS_CLOSED_RETENTION"].endswith(" Default: 7 days.")
    assert rows["STREAMFS_BATCH_MS"].endswith(" Default: 100 ms.")
    assert rows["STREAMFS_APP_ID"].endswith(
        "Default: the topic prefix without the '.', '-' and '_' at its ends.")
    assert rows["STREAMFS_SASL_MECHANISM"] == ("Kafka security of every client (librdkafka's "
                                               "sasl.mechanism). Default: not set.")


@pytest.mark.parametrize("command,extra", [
    (["produce"], {"STREAMFS_APP_ID", "STREAMFS_MAX_MESSAGE_BYTES", "STREAMFS_DATASETS"}),
    (["watch"], {"STREAMFS_APP_ID"}),
    (["dead-letters"], set()),
    (["topics", "create"], {"STREAMFS_APP_ID", "STREAMFS_MAX_MESSAGE_BYTES",
                            "STREAMFS_REPLICATION_FACTOR"}),
    (["topics", "describe"], {"STREAMFS_APP_ID", "STREAMFS_MAX_MESSAGE_BYTES",
                              "STREAMFS_REPLICATION_FACTOR"}),
])
def test_the_kafka_commands_help_lists_the_variables_they_read(command, extra):
    """Only `worker --help` listed variables: a user of `produce` against a secured cluster
    found STREAMFS_SECURITY_PROTOCOL & co. under the worker. Each lists what it reads, not
    the worker's batch sizes; flags of the main command and of the command itself named."""
    from streamfs.settings import _SECURITY_ENV

    out = CliRunner().invoke(main, [*command, "--help"], prog_name="streamfs",
                             terminal_width=200)
    assert out.exit_code == 0, out.output
    rows = dict(re.findall(r"^  (STREAMFS_[A-Z_]+)\s+(.*)$",
                           out.output.split("Environment variables")[1], re.MULTILINE))
    assert set(rows) == ({"STREAMFS_BOOTSTRAP_SERVERS", "STREAMFS_TOPIC_PREFIX",
                          "STREAMFS_TOPICS"} | set(_SECURITY_ENV) | extra)
    assert rows["STREAMFS_BOOTSTRAP_SERVERS"].startswith("(streamfs --bootstrap-servers) ")
    if "STREAMFS_APP_ID" in extra:
        assert rows["STREAMFS_APP_ID"].startswith("(--app-id) ")


@pytest.mark.parametrize("command", ["select", "evaluate"])
def test_the_offline_commands_help_lists_the_datasets_and_kernel_variables(command):
    out = CliRunner().invoke(main, [command, "--help"], terminal_width=200)
    assert out.exit_code == 0, out.output
    section = out.output.split("Environment variables")[1]
    assert set(re.findall(r"^  (STREAMFS_[A-Z_]+)", section, re.MULTILINE)) == {
        "STREAMFS_DATASETS", "STREAMFS_KERNEL_THREADS"}


@pytest.fixture
def signal_handlers():
    """SIGINT's and SIGTERM's handlers as they are, put back after the test (a worker command
    run in this process notes both until its start-up's own handlers replace them)."""
    import signal

    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield before
    for sig, handler in before.items():
        signal.signal(sig, handler)


def test_worker_web_host_flag_overrides_its_variable(monkeypatch, signal_handlers):
    """--web-host, as --web-port: the flag, else STREAMFS_WEB_HOST, else 127.0.0.1."""
    import streamfs.cli.worker as command
    import streamfs.worker.health as health
    import streamfs.worker.startup as startup

    ran = []
    monkeypatch.setattr(command, "_reachable", lambda settings: None)
    monkeypatch.setattr(startup, "begin_startup", lambda settings, stops: None)
    monkeypatch.setattr(startup, "run_worker", ran.append)
    monkeypatch.setattr(health, "check_web_address", lambda settings: None)  # 10.1.2.3: none
    monkeypatch.delenv("STREAMFS_WEB_HOST", raising=False)
    for args, env, host in ((["--web-host", "0.0.0.0"], {}, "0.0.0.0"),
                            ([], {"STREAMFS_WEB_HOST": "10.1.2.3"}, "10.1.2.3"),
                            (["--web-host", "::1"], {"STREAMFS_WEB_HOST": "10.1.2.3"}, "::1"),
                            ([], {}, "127.0.0.1")):
        out = CliRunner().invoke(main, ["-b", "127.0.0.1:1", "worker", *args], env=env)
        assert out.exit_code == 0, out.output
        assert ran.pop().web_host == host, (args, env)


def test_a_worker_refused_its_settings_leaves_the_signal_handlers_as_they_were(
        signal_handlers):
    """The worker command notes SIGINT and SIGTERM while it loads and checks its settings; one
    that stops there (exit 2) puts the handlers before back, for a caller in this process."""
    import signal

    out = CliRunner().invoke(main, ["-b", "127.0.0.1:1", "worker"],
                             env={"STREAMFS_RESULT_FORMAT": "yaml"})
    assert out.exit_code == 2 and "STREAMFS_RESULT_FORMAT must be one of" in out.output
    assert signal.getsignal(signal.SIGTERM) is signal_handlers[signal.SIGTERM]
    # SIGINT: the handler every command of `main` sets (broker.remember_interrupts)
    assert signal.getsignal(signal.SIGINT).__qualname__.startswith("remember_interrupts.")


def test_the_readers_start_without_scikit_learn_and_every_command_is_listed():
    """`watch` and `dead-letters` imported scikit-learn through the bench and evaluate
    commands' modules: 1.7 s before `streamfs watch --help` printed, 0.3 s without."""
    import subprocess
    import sys

    code = ("import sys; from streamfs.cli import main; import streamfs.client; "
            "assert 'sklearn' not in sys.modules, 'sklearn imported'; "
            "from click.testing import CliRunner; "
            "print(CliRunner().invoke(main, ['--help']).output)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    listed = [line.split()[0] for line in out.stdout.split("Commands:")[1].splitlines()
              if line.strip()]
    assert listed == sorted(main.list_commands(None)) and {"bench", "evaluate", "watch"} <= \
        set(listed)
    assert CliRunner().invoke(main, ["evaluate", "--help"]).exit_code == 0
    assert CliRunner().invoke(main, ["bench", "--help"]).exit_code == 0


def test_a_global_option_after_the_command_says_where_it_goes():
    # no broker is contacted: the command line is refused first
    out = CliRunner().invoke(main, ["watch", "s1", "-b", "localhost:1"])
    assert out.exit_code == 2
    assert ("Error: No such option '-b': -b is an option of streamfs itself, given before the "
            "command: `streamfs -b ... watch ...`") in out.output
    out = CliRunner().invoke(main, ["dead-letters", "--verbose"])
    assert out.exit_code == 2 and "`streamfs --verbose dead-letters ...`" in out.output
    out = CliRunner().invoke(main, ["watch", "--bogus"])  # other options: click's own message
    assert out.exit_code == 2 and "No such option" in out.output
    assert "option of streamfs itself" not in out.output
