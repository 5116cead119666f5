"""`streamfs watch` against a real broker, on result records written straight to the topic
(no worker: what the watch decides depends only on the records and their order)."""

from __future__ import annotations

import json

import pytest

from streamfs.topics import load_catalogue
from tests.cli.test_first_hour import streamfs
from tests.test_client import _put, _result

pytestmark = pytest.mark.kafka


@pytest.fixture
def selected(kafka_config, topic_prefix) -> str:
    return load_catalogue(topic_prefix)["selected"].name


def _versions(stdout: str) -> list[tuple[str, int]]:
    return [(r["stream"], r["version"]) for r in map(json.loads, stdout.splitlines())]


def test_until_final_without_a_stream_waits_for_every_stream(cli_env, kafka_config, selected):
    _put(kafka_config, selected, _result("a", 1, final=True), _result("b", 1))
    out = streamfs("watch", "--until-final", "--json", "--timeout", "4", env=cli_env)
    assert out.returncode == 3, out.stderr
    assert _versions(out.stdout) == [("a", 1), ("b", 1)]
    # which stream holds the wait up ("a" is final)
    assert f"no final result for every stream on {selected} after 4.0 s ('b' not final)" \
        in out.stderr
    _put(kafka_config, selected, _result("b", 2, final=True))
    out = streamfs("watch", "--until-final", "--json", "--timeout", "60", env=cli_env)
    assert out.returncode == 0 and _versions(out.stdout)[-1] == ("b", 2), out.stderr


def test_until_final_of_a_replaced_stream_is_its_newest_runs(cli_env, kafka_config, selected):
    _put(kafka_config, selected, _result("s1", 1), _result("s1", 2, final=True),
         _result("s1", 3, run=2), _result("s1", 4, run=2, final=True))
    out = streamfs("watch", "s1", "--until-final", "--json", "--timeout", "60", env=cli_env)
    assert out.returncode == 0, out.stderr
    assert _versions(out.stdout) == [("s1", v) for v in (1, 2, 3, 4)]


def test_once_with_a_run_shows_that_run_s_latest_or_says_it_is_not_there(cli_env, kafka_config,
                                                                         selected):
    """--run was ignored with --once: every run showed the stream's latest (run 2's)."""
    _put(kafka_config, selected, _result("r1", 1), _result("r1", 2, final=True),
         _result("r1", 3, run=2), _result("other", 1))
    for run, version in (("1", 2), ("2", 3)):
        out = streamfs("watch", "r1", "--once", "--run", run, "--json", env=cli_env)
        assert out.returncode == 0, out.stderr
        assert [(r["run"], r["version"]) for r in map(json.loads, out.stdout.splitlines())] \
            == [(int(run), version)]
    out = streamfs("watch", "r1", "--once", "--run", "3", "--json", env=cli_env)
    assert out.returncode == 1 and out.stdout == "", out.stdout
    assert out.stderr.splitlines()[0] == "no selection yet for run 3 of r1 (its latest " \
        "result is of run 2)", out.stderr
    out = streamfs("watch", "new", "--once", "--run", "1", env=cli_env)
    assert out.returncode == 1 and out.stderr.splitlines()[0] == "no selection yet for run 1 " \
        "of new", out.stderr
    _put(kafka_config, selected, _result("c1", 5, run=2))  # run 1's results compacted away
    out = streamfs("watch", "c1", "--once", "--run", "1", env=cli_env)
    assert out.returncode == 1 and out.stderr.splitlines()[0] == (
        f"no selection of run 1 of c1 left on {selected} (its latest result is of run 2; the "
        "topic keeps each stream's latest)"), out.stderr


def test_invalid_results_are_skipped_with_one_warning(cli_env, kafka_config, selected):
    _put(kafka_config, selected, b'{"v":1,"kind":"result","stream":"g6"}',
         {**_result("g6", 1), "version": None}, _result("g6", 2, final=True))
    for args in (["--once"], ["g6", "--until-final"], ["--until-final"]):
        out = streamfs("watch", *args, "--json", "--timeout", "60", env=cli_env)
        assert out.returncode == 0 and "Traceback" not in out.stderr, (args, out.stderr)
        assert _versions(out.stdout) == [("g6", 2)], args
        missing = "result without 'algorithm', 'version', 'selection'"
        assert f"skipped {selected}[0]@0: {missing}" in out.stderr
        assert f"skipped {selected}[0]@1: result whose 'version' is not an integer" in out.stderr


def test_a_timeout_without_until_final_says_the_time_is_up(cli_env, kafka_config, selected):
    _put(kafka_config, selected, _result("s3", 1, final=True))
    out = streamfs("watch", "s3", "--json", "--timeout", "3", env=cli_env)
    assert out.returncode == 3 and _versions(out.stdout) == [("s3", 1)]
    assert "time is up: watched 's3'" in out.stderr and "no final" not in out.stderr
    # --from-now reads none of the results before it: an id with results is not doubted (and
    # no worker runs here: that cause is said instead of any hint)
    out = streamfs("watch", "s3", "--from-now", "--json", "--timeout", "3", env=cli_env)
    assert out.returncode == 3 and out.stdout == "", out.stderr
    assert out.stderr.splitlines()[-1].startswith(
        f"time is up: watched 's3' on {selected} for 3.0 s: no streamfs worker is consuming")


def test_a_final_result_without_some_input_says_so(cli_env, kafka_config, selected):
    """A final result that leaves out messages the worker rejected is shown with a line
    saying so; --until-final exits 4 for it, as a watch that saw the dead letter before the
    final does (it exited 0: the exit code depended on when the watch started)."""
    _put(kafka_config, selected, {**_result("s5", 1, final=True),
                                  "counters": {"rejected_messages": 2}},
         _result("s6", 1, final=True))
    out = streamfs("watch", "--once", env=cli_env)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())  # rich wraps the line
    assert ("the worker rejected 2 message(s) of this run, left out of this selection "
            "(streamfs dead-letters --stream s5)") in text
    assert text.count("the worker rejected") == 1
    for args in (["s5"], []):  # the stream, and every stream
        out = streamfs("watch", *args, "--until-final", "--json", "--timeout", "60",
                       env=cli_env)
        assert out.returncode == 4, (args, out.stderr)
        assert ("s5", 1) in _versions(out.stdout)
        assert out.stderr.strip().splitlines()[-1] == (
            "Error: the worker rejected 2 message(s) of stream 's5'; its final result leaves "
            "them out (streamfs dead-letters --stream s5)"), out.stderr
    out = streamfs("watch", "s6", "--until-final", "--json", "--timeout", "60", env=cli_env)
    assert out.returncode == 0, out.stderr


def test_a_newer_run_s_complete_final_replaces_a_partial_one(cli_env, kafka_config, selected):
    _put(kafka_config, selected, {**_result("s7", 1, final=True),
                                  "counters": {"rejected_messages": 1}},
         _result("s7", 2, run=2, final=True))
    out = streamfs("watch", "s7", "--until-final", "--json", "--timeout", "60", env=cli_env)
    assert out.returncode == 0, out.stderr
    assert _versions(out.stdout) == [("s7", 1), ("s7", 2)]


@pytest.mark.parametrize("command", [["watch", "s4", "--json"],
                                     ["dead-letters", "--follow", "--json"]])
@pytest.mark.parametrize("signame,code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_ctrl_c_or_sigterm_stops_a_watch_with_128_plus_the_signal_and_no_error(
        cli_env, kafka_config, topic_prefix, selected, command, signame, code):
    """Ctrl-C is how a watch without --until-final ends: exit 130 (as an interrupted produce),
    not click's "Aborted!" and exit 1, which the README gives to Kafka errors. SIGTERM
    (`docker compose stop`, systemd, `timeout`) was not handled at all: as a container's
    PID 1 the watch ignored it until the engine's SIGKILL."""
    import signal
    import subprocess
    import sys

    _put(kafka_config, selected, _result("s4", 1))
    dead = load_catalogue(topic_prefix)["dead_letter"].name
    _put(kafka_config, dead, {"kind": "dead_letter", "stream": "s4", "run": 1, "reason": "why",
                              "topic": "f", "partition": 0, "offset": 1})
    proc = subprocess.Popen([sys.executable, "-m", "streamfs.cli", *command],
                            env=cli_env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        first = proc.stdout.readline()  # it is reading: interrupt it there
        proc.send_signal(getattr(signal, signame))
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    if command[0] == "watch":
        assert _versions(first + out) == [("s4", 1)]
    else:
        assert json.loads(first)["reason"] == "why"
    assert proc.returncode == code and "Aborted" not in err and "Traceback" not in err, err


def test_ctrl_c_while_the_broker_is_down_exits_130_without_a_traceback(cli_env, kafka_config,
                                                                       selected, broker_outage):
    """With the broker down, librdkafka logs as it reconnects; a Ctrl-C that came while
    confluent-kafka served a log line was lost in the callback and ``poll`` failed with
    SystemError: a traceback and exit 1 (the operator's test, twice). Exit 130 either way."""
    import signal
    import subprocess
    import sys

    _put(kafka_config, selected, _result("s5", 1))
    proc = subprocess.Popen([sys.executable, "-m", "streamfs.cli", "watch", "s5", "--json"],
                            env=cli_env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert proc.stdout.readline()  # reading: the broker goes away under it
        with broker_outage():
            for _ in range(20):  # Ctrl-C pressed until it goes (a lost one did nothing)
                proc.send_signal(signal.SIGINT)
                try:
                    _, err = proc.communicate(timeout=3)
                    break
                except subprocess.TimeoutExpired:
                    continue
    finally:
        proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err, err


def test_from_now_shows_only_new_results(cli_env, kafka_config, selected):
    _put(kafka_config, selected, _result("old", 1, final=True))
    out = streamfs("watch", "--from-now", "--until-final", "--json", "--timeout", "3",
                   env=cli_env)
    assert out.returncode == 3 and out.stdout == "", out.stderr
    refused = streamfs("watch", "--once", "--from-now", env=cli_env)
    assert refused.returncode == 2 and "--from-now does not apply" in refused.stderr


def test_refused_input_of_another_run_is_shown_once_per_run_with_its_count(
        cli_env, kafka_config, topic_prefix, selected):
    """A refused publish dead-letters every one of its messages: one warning per stream and
    refused run, and its count at the end, not a line per message."""
    from streamfs.codec import encode

    def letter(token: str, seq: int) -> dict:
        original = encode({"kind": "close", "stream": "d1", "seq": seq, "run": token})
        return {"kind": "dead_letter", "stream": "d1", "run": None, "run_refused": True,
                "reason": f"seq {seq} of run {token}", "original": original,
                "topic": "features", "partition": 0, "offset": seq}

    dead = load_catalogue(topic_prefix)["dead_letter"].name
    _put(kafka_config, dead, *(letter("tok-b", seq) for seq in range(32)),
         *(letter("tok-c", seq) for seq in range(3)))
    _put(kafka_config, selected, _result("d1", 1, final=True))
    out = streamfs("watch", "d1", "--until-final", "--json", "--timeout", "60", env=cli_env)
    assert out.returncode == 0 and _versions(out.stdout) == [("d1", 1)], out.stderr
    warnings = [line for line in out.stderr.splitlines() if "another run" in line]
    assert warnings == [
        "WARNING streamfs.client: input of stream 'd1' from another run was refused: seq 0 of "
        "run tok-b (that run's other refused messages are counted, not shown)",
        "WARNING streamfs.client: input of stream 'd1' from another run was refused: seq 0 of "
        "run tok-c (that run's other refused messages are counted, not shown)",
        "warning: 32 message(s) of another run of stream 'd1' were refused "
        "(streamfs dead-letters --stream d1)",
        "warning: 3 message(s) of another run of stream 'd1' were refused "
        "(streamfs dead-letters --stream d1)"], out.stderr


def test_ids_with_control_characters_are_shown_escaped(cli_env, kafka_config, topic_prefix,
                                                       selected):
    """A control character in a stream id shows as in a Python literal rather than vanishing
    (the worker dead-letters input keyed 'a\\x1fb' under that id) or acting on the terminal."""
    dead = load_catalogue(topic_prefix)["dead_letter"].name
    _put(kafka_config, dead, {"kind": "dead_letter", "stream": "a\x1fb", "run": None,
                              "reason": "bad id", "original": b"", "topic": "f",
                              "partition": 0, "offset": 3})
    _put(kafka_config, selected, _result("c\x1bd", 1, final=True), _result("plain", 1))
    letters = streamfs("dead-letters", env=cli_env)
    assert letters.returncode == 0, letters.stderr
    assert letters.stdout.startswith("'a\\x1fb'") and "\x1f" not in letters.stdout
    tables = streamfs("watch", "--once", env=cli_env)
    assert tables.returncode == 0, tables.stderr
    assert "'c\\x1bd' · saola · v1 · final" in tables.stdout and "\x1b" not in tables.stdout
    assert "plain · saola · v1" in tables.stdout  # printable ids as they are


def test_dead_letters_say_when_the_worker_wrote_them(cli_env, kafka_config, topic_prefix):
    """Which letters are new is what an operator asks first: each shows its record's time."""
    from datetime import datetime, timezone

    from confluent_kafka import Producer

    from streamfs.codec import encode

    dead = load_catalogue(topic_prefix)["dead_letter"].name
    written = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    producer = Producer(kafka_config)
    producer.produce(dead, key=b"t1", partition=0, timestamp=int(written.timestamp() * 1000),
                     value=encode({"kind": "dead_letter", "stream": "t1", "run": None,
                                   "reason": "bad", "original": b"", "topic": "f",
                                   "partition": 0, "offset": 3}))
    assert producer.flush(30) == 0
    shown = streamfs("dead-letters", env=cli_env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split()[:5] == ["t1", "f[0]@3", "0", "bytes", "2026-01-02T03:04:05Z"]
    as_json = streamfs("dead-letters", "--json", env=cli_env)
    assert json.loads(as_json.stdout)["written_at"] == "2026-01-02T03:04:05Z"


def test_output_piped_into_head_is_not_a_kafka_error(cli_env, kafka_config, selected):
    """`streamfs watch --json | head -1`: the write after head left raised EPIPE, which click
    turned into exit 1 (README: a Kafka error, or `watch --once` found no selection)."""
    import subprocess
    import sys
    import time

    _put(kafka_config, selected, _result("p1", 1))
    proc = subprocess.Popen([sys.executable, "-m", "streamfs.cli", "watch", "--json",
                             "--timeout", "120"], env=cli_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert json.loads(proc.stdout.readline())["stream"] == "p1"
        proc.stdout.close()  # head -1 has its line and goes
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            _put(kafka_config, selected, _result("p1", 2))  # the next line meets the closed pipe
            time.sleep(0.5)
        assert proc.wait(timeout=10) == 141
        stderr = proc.stderr.read()
        assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    finally:
        if proc.poll() is None:
            proc.kill()


def test_dead_letters_from_now_follows_only_new_letters(cli_env, kafka_config, topic_prefix):
    """--follow replayed the whole topic (30 days) before any new letter."""
    import queue
    import subprocess
    import sys
    import threading
    import time

    dead = load_catalogue(topic_prefix)["dead_letter"].name

    def letter(stream: str) -> dict:
        return {"kind": "dead_letter", "stream": stream, "run": 1, "reason": "why",
                "original": b"x", "topic": "t", "partition": 0, "offset": 1}

    _put(kafka_config, dead, letter("old"))
    assert streamfs("dead-letters", "--from-now", env=cli_env).returncode == 2  # no --follow
    proc = subprocess.Popen([sys.executable, "-m", "streamfs.cli", "dead-letters", "--follow",
                             "--from-now", "--json"], env=cli_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout],
                     daemon=True).start()
    try:
        deadline = time.monotonic() + 60
        new = 0
        while lines.empty():  # new letters until the reader, assigned at the end, sees one
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            new += 1
            _put(kafka_config, dead, letter(f"new-{new}"))
            try:
                lines.put(lines.get(timeout=0.5))
            except queue.Empty:
                pass
        assert json.loads(lines.get())["stream"].startswith("new-")
    finally:
        proc.kill()
        proc.wait(10)


def test_a_catalogue_without_the_role_a_reader_needs_is_one_line(cli_env, tmp_path):
    """STREAMFS_TOPICS without [topics.dead_letter] or [topics.selected]: `watch` and
    `dead-letters` raised KeyError (a traceback, exit 1); the file is a setup mistake, exit 2."""
    catalogue = tmp_path / "catalogue.toml"
    catalogue.write_text('[topics.features]\nsuffix = "features"\npartitions = 8\n'
                         '[topics.selected]\nsuffix = "selected-features"\npartitions = 8\n')
    env = {**cli_env, "STREAMFS_TOPICS": str(catalogue)}
    for args, role in ((["watch", "s1", "--until-final"], "dead_letter"),
                       (["dead-letters"], "dead_letter")):
        out = streamfs(*args, env=env, timeout=60)
        assert out.returncode == 2 and "Traceback" not in out.stderr, (args, out.stderr)
        assert out.stderr.strip() == (f"Error: STREAMFS_TOPICS {str(catalogue)!r}: the topic "
                                      f"catalogue has no [topics.{role}]"), out.stderr
    catalogue.write_text('[topics.dead_letter]\nsuffix = "dead-letter"\npartitions = 1\n')
    out = streamfs("watch", "--once", env=env, timeout=60)
    assert out.returncode == 2 and out.stderr.strip().endswith("has no [topics.selected]"), \
        out.stderr


def test_dead_letters_count_the_input_bytes_of_json_letters(cli_env, kafka_config,
                                                            topic_prefix):
    """With STREAMFS_RESULT_FORMAT=json a letter's 'original' is base64 text: `dead-letters`
    showed the length of that text (24388 bytes for an input of 18290)."""
    import base64

    dead = load_catalogue(topic_prefix)["dead_letter"].name
    letter = {"v": 1, "kind": "dead_letter", "stream": "j1", "run": 1, "reason": "why",
              "original": base64.b64encode(bytes(300)).decode(), "topic": "t", "partition": 0,
              "offset": 7}
    _put(kafka_config, dead, json.dumps(letter).encode(), {**letter, "original": 5})
    out = streamfs("dead-letters", env=cli_env, timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert [line.split("@7  ")[1].split("  ")[0] for line in out.stdout.splitlines()] \
        == ["300 bytes", "0 bytes"], out.stdout


def test_dead_letters_skips_what_is_no_dead_letter_and_says_how_much_input_was_cut(
        cli_env, kafka_config, topic_prefix):
    """An input message or a result sent to the dead-letter topic failed the text output with
    a KeyError traceback (exit 1: "a Kafka error"), and --json printed it as a dead letter;
    a letter of a 9 MB input showed as "1024 bytes"."""
    dead = load_catalogue(topic_prefix)["dead_letter"].name
    letter = {"kind": "dead_letter", "stream": "big", "run": 1, "reason": "too large",
              "original": bytes(1024), "original_truncated": True,
              "original_size": 9_437_184, "topic": "t", "partition": 0, "offset": 7}
    _put(kafka_config, dead, {"kind": "open", "stream": "o1", "seq": 0},
         json.dumps({"v": 1}).encode(), _result("r1", 1), letter,
         {**letter, "stream": "older", "original_size": None})  # a worker's before the size
    out = streamfs("dead-letters", env=cli_env, timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    # topic[partition]@offset, the size, when it was written, the reason
    assert [line.split("@7  ")[1].rsplit("  ", 2)[0] for line in out.stdout.splitlines()] \
        == ["9437184 bytes (first 1024 kept)", "more (first 1024 kept)"], out.stdout
    assert "2 dead letter(s) on " in out.stderr
    assert "; 3 record(s) that are no dead letters skipped" in out.stderr
    as_json = streamfs("dead-letters", "--json", env=cli_env, timeout=60)
    assert as_json.returncode == 0, as_json.stderr
    assert [json.loads(line)["kind"] for line in as_json.stdout.splitlines()] \
        == ["dead_letter"] * 2


@pytest.mark.parametrize("bad, problem", [
    ({"counters": []}, "result whose 'counters' is not a map of counts"),
    ({"counters": {"rejected_messages": "2"}}, "result whose 'counters' is not a map of counts"),
    ({"selection": [{"feature": 1, "score": "high"}]},
     "result with a 'selection' item whose 'score' is not a number"),
    ({"selection": [{"feature": 1, "affiliated": 5}]},
     "result with a 'selection' item whose 'affiliated' is not a list of [feature, strength, "
     "name]"),
])
def test_results_whose_shown_fields_are_wrong_are_skipped(cli_env, kafka_config, selected, bad,
                                                          problem):
    """`watch` formats counters, scores and affiliated features and decides its exit code on
    'rejected_messages': records that got them wrong ended it in a traceback (AttributeError,
    ValueError, TypeError), where README says records readers cannot use are skipped."""
    _put(kafka_config, selected, {**_result("w1", 1, final=True), **bad},
         {**_result("w2", 2, final=True), "counters": {"rejected_messages": 0}})
    for args in (["--once"], ["w2", "--until-final"], ["--until-final"]):
        out = streamfs("watch", *args, "--timeout", "60", env=cli_env, timeout=120)
        assert out.returncode == 0 and "Traceback" not in out.stderr, (args, out.stderr)
        assert "w2 · saola · v2 · final" in out.stdout and "w1" not in out.stdout, out.stdout
        assert f"skipped {selected}[0]@0: {problem}" in out.stderr, out.stderr


def test_a_topic_deleted_under_a_watch_is_one_line_and_exit_1(cli_env, kafka_config,
                                                              topic_prefix, selected):
    """A watch whose topic was deleted polled on without a word (seen: 12 minutes), and so did
    `dead-letters --follow`: each now says so within a few seconds, exit 1 as for a topic
    missing at the start."""
    import subprocess
    import sys

    from tests.test_client import _delete_topic

    dead = load_catalogue(topic_prefix)["dead_letter"].name
    _put(kafka_config, selected, _result("t1", 1))
    _put(kafka_config, dead, {"kind": "dead_letter", "stream": "t1", "run": 1, "reason": "why",
                              "topic": "f", "partition": 0, "offset": 1})
    commands = {selected: ["watch", "--json", "--timeout", "30"], dead: ["dead-letters", "-f"]}
    procs = {topic: subprocess.Popen([sys.executable, "-m", "streamfs.cli", *args], env=cli_env,
                                     text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for topic, args in commands.items()}
    try:
        for topic, proc in procs.items():
            assert proc.stdout.readline(), topic  # the command is reading: delete its topic
            _delete_topic(kafka_config, topic)
        for topic, proc in procs.items():
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 1 and "Traceback" not in err, (topic, err)
            assert err.strip().splitlines()[-1] == (f"Error: topic {topic!r} was deleted while "
                                                    "being read"), err
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()


def test_until_final_of_a_run_replaced_before_its_final_exits_5(cli_env, kafka_config,
                                                                selected):
    """`--run 1 --until-final` of a stream replaced (run 2) before run 1's final result, or
    whose run 1 results were compacted away, waited forever; run 1's final before the replace
    still ends it with 0."""
    _put(kafka_config, selected, _result("w", 1), _result("w", 2, run=2),
         _result("c", 5, run=2), _result("f", 1), _result("f", 2, final=True),
         _result("f", 3, run=2))
    out = streamfs("watch", "w", "--until-final", "--run", "1", "--json", "--timeout", "30",
                   env=cli_env)
    assert out.returncode == 5 and _versions(out.stdout) == [("w", 1)], out.stderr
    assert out.stderr.strip().splitlines()[-1] == (
        "Error: run 1 of 'w' was replaced by run 2 before its final result"), out.stderr
    out = streamfs("watch", "c", "--until-final", "--run", "1", "--timeout", "30", env=cli_env)
    assert out.returncode == 5 and out.stdout == "", out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith(
        f"Error: no result of run 1 of 'c' is left on {selected}: it was replaced by run 2"), \
        out.stderr
    out = streamfs("watch", "f", "--until-final", "--run", "1", "--json", "--timeout", "30",
                   env=cli_env)
    assert out.returncode == 0 and _versions(out.stdout) == [("f", 1), ("f", 2)], out.stderr


def test_a_timeout_without_a_worker_says_so_not_that_the_id_may_be_wrong(cli_env, selected):
    """With no worker running, a stream with no result at all timed out asking whether its id
    was mistyped: the cause was the missing worker (found by the first-hour audit)."""
    out = streamfs("watch", "nowork", "--until-final", "--timeout", "3", env=cli_env)
    assert out.returncode == 3, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith(f"no final result for 'nowork' on {selected} after 3.0 s: no "
                           "streamfs worker is consuming (consumer group "), last
    assert last.endswith("has no members): start `streamfs worker`"), last
    assert "the stream's id?" not in out.stderr


def test_an_empty_stream_id_and_options_once_ignores_are_refused(cli_env):
    """`watch "$SID"` with the variable unset waited for the stream '' forever (or said "no
    selection yet for any stream" with --once); --once ran ignoring --until-final and
    --timeout."""
    out = streamfs("watch", "", env=cli_env)
    assert out.returncode == 2 and out.stderr.strip() == (
        "Error: STREAM is empty: give a stream id, or leave it out to watch every stream")
    out = streamfs("dead-letters", "--stream", "", env=cli_env)
    assert out.returncode == 2 and "--stream is empty" in out.stderr, out.stderr
    out = streamfs("watch", "--timeout", "nan", env=cli_env)  # was a ValueError traceback
    assert out.returncode == 2 and "'nan' is not a number of seconds" in out.stderr, out.stderr
    out = streamfs("watch", "s", "--once", "--until-final", env=cli_env)
    assert out.returncode == 2 and out.stderr.strip() == (
        "Error: --once shows the current selections and exits: --until-final does not apply")


def test_a_live_watch_of_an_id_without_results_says_so_once_it_has_read_the_topic(
        cli_env, kafka_config, topic_prefix, selected):
    """A mistyped id sat silent until Ctrl-C; --once and --timeout said it. A member in the
    workers' consumer group stands for a running worker (without one, that is what is said)."""
    from confluent_kafka import Consumer

    _put(kafka_config, selected, _result("s9", 1, final=True))
    hint = (f"no result of 's9x' on {selected} yet: waiting (is 's9x' the stream's id? "
            "`streamfs watch --once` lists every stream's latest)")
    out = streamfs("watch", "s9x", "--timeout", "3", env=cli_env)
    assert out.returncode == 3 and hint not in out.stderr, out.stderr  # no worker: not the id
    member = Consumer({**kafka_config, "group.id": topic_prefix.strip(".")})
    try:
        member.subscribe([selected])
        for _ in range(240):  # until it has joined: the group has a member
            if member.assignment():
                break
            member.poll(0.5)
        assert member.assignment(), "the stand-in worker never joined its group"
        out = streamfs("watch", "s9x", "--timeout", "3", env=cli_env)
        assert out.returncode == 3 and hint in out.stderr.splitlines(), out.stderr
        out = streamfs("watch", "s9", "--timeout", "3", env=cli_env)  # it has results
        assert out.returncode == 3 and "yet: waiting" not in out.stderr, out.stderr
    finally:
        member.close()


def test_until_final_with_the_final_on_the_topic_warns_of_no_missing_worker(
        cli_env, kafka_config, selected):
    """`watch --until-final` of a stream whose final result was already on the topic printed
    it and exited 0, after a warning that no worker was running (nothing was waited for). The
    warning comes once the topic is read, when a result is still to come."""
    _put(kafka_config, selected, _result("w1", 1), _result("w1", 2, final=True),
         _result("w2", 1))
    warning = "warning: no streamfs worker is consuming (consumer group"
    for args in (["w1"], ["w1", "--run", "1"]):
        out = streamfs("watch", *args, "--until-final", "--json", "--timeout", "60",
                       env=cli_env)
        assert out.returncode == 0 and warning not in out.stderr, (args, out.stderr)
        assert _versions(out.stdout)[-1] == ("w1", 2)
    for args in (["--until-final"], ["w2", "--until-final"], ["w1"]):  # w2: not final
        out = streamfs("watch", *args, "--json", "--timeout", "3", env=cli_env)
        assert out.returncode == 3, (args, out.stderr)
        lines = out.stderr.splitlines()
        assert lines[0].startswith(warning) and "results arrive once `streamfs worker` runs" \
            in lines[0], (args, out.stderr)
        assert lines[-1].endswith("has no members): start `streamfs worker`"), out.stderr
