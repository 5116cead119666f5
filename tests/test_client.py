"""The output readers against the real broker: they start at each partition's first offset,
which need not be 0 (retention and DeleteRecords move it), and keep reading what comes after."""

import re
import threading

import pytest

from streamfs.client import OutputReader, first_offset
from streamfs.producers import StreamPublisher
from streamfs.topics import load_catalogue

pytestmark = pytest.mark.kafka


def _publish(kafka_config: dict, topic: str, *numbers: int) -> None:
    with StreamPublisher(kafka_config, topic) as pub:
        for i in numbers:
            pub.send({"kind": "dead_letter", "stream": "s", "reason": "r", "n": i})


def test_reader_starts_at_the_log_start_and_follows_new_messages(kafka_config, topic_prefix):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    topic = load_catalogue(topic_prefix)["dead_letter"].name  # one partition, not compacted
    _publish(kafka_config, topic, 1, 2, 3)
    # the first two records are gone: the log now starts at offset 2 (as after retention)
    admin = AdminClient(kafka_config)
    for future in admin.delete_records([TopicPartition(topic, 0, 2)]).values():
        assert future.result(timeout=30).low_watermark == 2

    with OutputReader(kafka_config, topic) as reader:
        reader.assign()
        _publish(kafka_config, topic, 4)  # after the assignment, before any read: not missed
        messages = (m for m in reader.messages(timeout=60) if m is not None)
        seen = [next(messages)[1]["n"], next(messages)[1]["n"]]
        publisher = threading.Thread(target=_publish, args=(kafka_config, topic, 5))
        publisher.start()  # while the reader waits
        seen.append(next(messages)[1]["n"])
        publisher.join()
    assert seen == [3, 4, 5]


def test_an_offset_the_broker_cannot_give_falls_back_to_the_logical_first(kafka_config,
                                                                           topic_prefix):
    """A just-created topic's leader may be unknown for a moment (NOT_LEADER_FOR_PARTITION,
    seen in CI): the reader then starts that partition at OFFSET_BEGINNING instead of failing.
    A partition that does not exist makes the broker refuse the same way."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer

    topic = load_catalogue(topic_prefix)["dead_letter"].name
    _publish(kafka_config, topic, 1)  # acknowledged: the broker leads partition 0 by now
    consumer = Consumer({**kafka_config, "group.id": "probe"})
    try:
        assert first_offset(consumer, topic, 0) == 0
        assert first_offset(consumer, topic, 99) == OFFSET_BEGINNING
    finally:
        consumer.close()


def test_a_reader_without_a_broker_names_the_address_at_once(capfd):
    from streamfs.broker import BrokerUnreachable
    from streamfs.client import current_selection
    from streamfs.worker.process import free_port

    address = f"127.0.0.1:{free_port()}"
    # librdkafka's retries go to the streamfs.kafka logger, not as hundreds of stderr lines
    # for the 30 s the topic query would wait
    with pytest.raises(BrokerUnreachable, match=f"cannot reach Kafka at {address}"):
        current_selection("s", {"bootstrap.servers": address}, "streamfs.selected-features")
    assert "Connection refused" not in capfd.readouterr().err


# --- results: what until_final waits for, invalid records, where reading starts -------------

def _result(stream: str, version: int, *, run: int = 1, final: bool = False) -> dict:
    return {"kind": "result", "stream": stream, "algorithm": "saola", "params": {}, "run": run,
            "version": version, "final": final, "selection": [{"feature": version}]}


def _put(kafka_config: dict, topic: str, *messages: dict | bytes) -> None:
    """Records on partition 0, in this order (a reader sees them so), keyed by their stream."""
    from confluent_kafka import Producer

    from streamfs.codec import encode

    producer = Producer(kafka_config)
    for m in messages:
        value = m if isinstance(m, bytes) else encode(m)
        key = b"raw" if isinstance(m, bytes) else str(m.get("stream")).encode()
        producer.produce(topic, key=key, value=value, partition=0)
    assert producer.flush(30) == 0


def _versions(results) -> list[tuple[str, int]]:
    return [(r["stream"], r["version"]) for r in results]


def test_until_final_without_a_stream_waits_for_every_stream_seen(kafka_config, topic_prefix):
    """A stream final before another one's first result was read does not end the wait."""
    from streamfs.client import SelectionReader

    topic = load_catalogue(topic_prefix)["selected"].name
    _put(kafka_config, topic, _result("a", 1, final=True), _result("b", 1))
    with SelectionReader(kafka_config, topic) as reader:
        updates = reader.updates(until_final=True, timeout=60)
        seen = [next(updates), next(updates)]
        _put(kafka_config, topic, _result("b", 2, final=True))  # "b" still open until now
        seen += list(updates)
    assert _versions(seen) == [("a", 1), ("b", 1), ("b", 2)]


def test_until_final_waits_for_the_newest_run(kafka_config, topic_prefix):
    """After a replace, the final of run 1 does not end the wait for the stream: run 2's does."""
    from streamfs.client import SelectionReader

    topic = load_catalogue(topic_prefix)["selected"].name
    _put(kafka_config, topic, _result("s1", 1), _result("s1", 2, final=True),
         _result("s1", 3, run=2))
    with SelectionReader(kafka_config, topic) as reader:
        updates = reader.updates("s1", until_final=True, timeout=60)
        seen = [next(updates) for _ in range(3)]
        _put(kafka_config, topic, _result("s1", 4, run=2, final=True))
        seen += list(updates)
    assert _versions(seen) == [("s1", 1), ("s1", 2), ("s1", 3), ("s1", 4)]


def test_current_selections_of_a_run_are_that_run_s_latest(kafka_config, topic_prefix):
    """``run`` picks the latest result of that run, not the stream's latest (run 2's)."""
    from streamfs.client import SelectionReader, current_selection

    topic = load_catalogue(topic_prefix)["selected"].name
    _put(kafka_config, topic, _result("s1", 1), _result("s1", 2, final=True),
         _result("s1", 3, run=2), _result("s2", 1))
    with SelectionReader(kafka_config, topic) as reader:
        assert _versions(reader.current_selections().values()) == [("s1", 3), ("s2", 1)]
        assert _versions(reader.current_selections(run=1).values()) == [("s1", 2), ("s2", 1)]
        assert _versions(reader.current_selections("s1", run=1).values()) == [("s1", 2)]
        assert reader.current_selections("s1", run=3) == {}
    assert current_selection("s1", kafka_config, topic, run=1)["version"] == 2
    assert current_selection("s1", kafka_config, topic, run=2)["version"] == 3
    assert current_selection("s1", kafka_config, topic, run=3) is None


def test_the_first_dead_letter_of_a_run_is_the_one_reported(kafka_config, topic_prefix):
    """A refused open dead-letters every later message of the run as "data before 'open'":
    the wait ends with the open's reason, the cause (it named the last letter read before)."""
    from streamfs.client import SelectionReader, StreamRejected

    topics = load_catalogue(topic_prefix)
    letter = {"kind": "dead_letter", "stream": "two", "run": 1, "topic": "f", "partition": 0}
    _put(kafka_config, topics["dead_letter"].name,
         {**letter, "reason": "max_buffer_bytes too large", "offset": 0},
         {**letter, "reason": "'close' for unknown stream 'two'", "offset": 2})
    with SelectionReader(kafka_config, topics["selected"].name,
                         dead_letters=topics["dead_letter"].name) as reader:
        with pytest.raises(StreamRejected, match=r"\(f\[0\]@0\): max_buffer_bytes too large"):
            list(reader.updates("two", until_final=True, timeout=60))


def test_a_dead_letter_of_the_watched_run_ends_the_wait(kafka_config, topic_prefix):
    from streamfs.client import SelectionReader, StreamRejected

    topics = load_catalogue(topic_prefix)
    letter = {"kind": "dead_letter", "stream": "r", "run": 1, "reason": "bad block",
              "topic": "f", "partition": 0, "offset": 7}
    _put(kafka_config, topics["selected"].name, _result("r", 1), _result("q", 1, run=2))
    _put(kafka_config, topics["dead_letter"].name, letter, {**letter, "stream": "q"})
    with SelectionReader(kafka_config, topics["selected"].name,
                         dead_letters=topics["dead_letter"].name) as reader:
        with pytest.raises(StreamRejected, match=r"stream 'r' \(f\[0\]@7\): bad block"):
            list(reader.updates("r", until_final=True, timeout=60))
        # rejected before any result (a refused open)
        _put(kafka_config, topics["dead_letter"].name, {**letter, "stream": "none", "run": None})
        with pytest.raises(StreamRejected, match="stream 'none'"):
            list(reader.updates("none", until_final=True, timeout=60))
        # "q" is in run 2: run 1's dead letter is not about it
        with pytest.raises(TimeoutError, match=r"no final result for 'q' on \S+ after 3 s$"):
            list(reader.updates("q", until_final=True, timeout=3))
        # an id with no result at all (a typo?) is said to be one
        with pytest.raises(TimeoutError, match=r"no final result for 'qq' on \S+ after 3 s "
                                               r"\(none of its results at all: is 'qq' the "
                                               r"stream's id\?\)$"):
            list(reader.updates("qq", until_final=True, timeout=3))
    # reading only what comes after the start, "r" (which has results) is not doubted
    with SelectionReader(kafka_config, topics["selected"].name, start="end") as reader:
        with pytest.raises(TimeoutError, match=r"time is up: watched 'r' on \S+ for 3 s \(none "
                                               r"of its results since the watch began: earlier "
                                               r"ones are not read\)$"):
            list(reader.updates("r", timeout=3))


def _runless(stream: str, offset: int, *, partition: int = 0,
             original: bytes | None = b"\xc1garbage") -> dict:
    """A dead letter without a run, as the worker writes for input it could not read (by
    default) under a key no stream was open for, read at ``f[partition]@offset``."""
    return {"kind": "dead_letter", "stream": stream, "run": None, "run_refused": False,
            "reason": "undecodable message", "original": original, "topic": "f",
            "partition": partition, "offset": offset}


def _opened(result: dict, offset: int) -> dict:
    """``result`` saying that its run's open was read at ``f[0]@offset``."""
    return {**result, "open_input": {"topic": "f", "partition": 0, "offset": offset}}


def test_a_dead_letter_without_a_run_fails_only_a_run_it_came_after(kafka_config, topic_prefix):
    """Results say where their run's open was read (``open_input``): a dead letter without a
    run read before it, or in another input partition, is not the run's; one read after it in
    the same partition is, and so is any where results do not say (an older worker's)."""
    from streamfs.client import SelectionReader, StreamRejected

    topics = load_catalogue(topic_prefix)
    selected, dead = topics["selected"].name, topics["dead_letter"].name
    _put(kafka_config, selected, _opened(_result("stale", 1), 5),
         _opened(_result("elsewhere", 1), 5), _opened(_result("re", 1, final=True), 1),
         _opened(_result("re", 2, run=2), 9))
    _put(kafka_config, dead, _runless("stale", 4), _runless("elsewhere", 6, partition=1),
         _runless("re", 4))
    with SelectionReader(kafka_config, selected, dead_letters=dead) as reader:
        # every stream in its newest run: none is rejected, each waits for its final
        with pytest.raises(TimeoutError, match="no final result for every stream"):
            list(reader.updates(until_final=True, timeout=3))
        with pytest.raises(TimeoutError, match="no final result for 're'"):
            list(reader.updates("re", run=2, until_final=True, timeout=3))
        _put(kafka_config, selected, _opened(_result("stale", 2, final=True), 5))
        assert _versions(reader.updates("stale", until_final=True, timeout=60)) == [
            ("stale", 1), ("stale", 2)]

        _put(kafka_config, selected, _opened(_result("late", 1), 5), _result("old", 1))
        _put(kafka_config, dead, _runless("late", 6), _runless("old", 4))
        for sid, where in (("late", "f[0]@6"), ("old", "f[0]@4")):
            with pytest.raises(StreamRejected, match=re.escape(f"stream '{sid}' ({where})")):
                list(reader.updates(sid, until_final=True, timeout=60))


def test_before_the_runs_first_result_only_unreadable_input_waits(kafka_config, topic_prefix,
                                                                  caplog):
    """Before a result says where the run's open was, a dead letter of unreadable input (a
    stale record under the stream's key) waits for it, named once in the log; one of readable
    input (a keyless producer's message) fails the run at once."""
    from streamfs.client import SelectionReader, StreamRejected
    from streamfs.codec import encode

    topics = load_catalogue(topic_prefix)
    selected, dead = topics["selected"].name, topics["dead_letter"].name
    keyless = encode({"kind": "open", "stream": "nokey", "seq": 0, "run": "tok"})
    _put(kafka_config, dead, _runless("early", 4), _runless("early", 7, original=b""),
         _runless("nokey", 4, original=keyless))
    with SelectionReader(kafka_config, selected, dead_letters=dead) as reader:
        with caplog.at_level("WARNING", logger="streamfs.client"):
            with pytest.raises(TimeoutError, match="no final result for 'early'"):
                list(reader.updates("early", until_final=True, timeout=3))
        # the newest letter of the partition is the one an open before it would not excuse
        held = [r.getMessage() for r in caplog.records if "could not read" in r.getMessage()]
        assert len(held) == 1 and "'early' that the worker could not read was dead-lettered " \
            "(f[0]@7: undecodable message): it fails run 1 only if it came after" in held[0]
        with pytest.raises(StreamRejected, match=r"stream 'nokey' \(f\[0\]@4\)"):
            list(reader.updates("nokey", until_final=True, timeout=60))
        # the run's results: its open came between the two letters
        _put(kafka_config, selected, _opened(_result("early", 1), 5))
        with pytest.raises(StreamRejected, match=r"stream 'early' \(f\[0\]@7\)"):
            list(reader.updates("early", until_final=True, timeout=60))


def test_invalid_records_are_skipped_counted_and_named_once(kafka_config, topic_prefix, caplog):
    from streamfs.client import SelectionReader, current_selection

    topic = load_catalogue(topic_prefix)["selected"].name
    no_version = b'{"v":1,"kind":"result","stream":"g6"}'
    text_selection = {**_result("g7", 1), "selection": "x1,x2"}
    _put(kafka_config, topic, no_version, text_selection, no_version, b"plain text",
         _result("ok", 1))
    assert current_selection("ok", kafka_config, topic)["version"] == 1
    caplog.clear()
    with caplog.at_level("WARNING", logger="streamfs.client"):
        with SelectionReader(kafka_config, topic) as reader:
            assert list(reader.current_selections()) == ["ok"]
    assert reader.skipped.counts == {"result without 'algorithm', 'version', 'selection'": 2,
                                     "result whose 'selection' is not a list": 1,
                                     "not a streamfs message": 1}
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 3, warnings
    missing = "result without 'algorithm', 'version', 'selection'"
    assert f"skipped {topic}[0]@0: {missing}" in warnings[0]


def test_start_at_the_end_reads_only_what_comes_after(kafka_config, topic_prefix):
    from streamfs.client import SelectionReader

    topic = load_catalogue(topic_prefix)["selected"].name
    _put(kafka_config, topic, _result("old", 1, final=True))
    with SelectionReader(kafka_config, topic, start="end") as reader:
        reader.assign()
        _put(kafka_config, topic, _result("new", 1, final=True))
        assert _versions(reader.updates(until_final=True, timeout=60)) == [("new", 1)]
        # what comes between two reads is not lost: the second began at the end as it was
        # then, past "later" (a subscriber that takes control back with a timeout)
        _put(kafka_config, topic, _result("later", 1, final=True))
        assert _versions(reader.updates(to_end=True)) == [("new", 1), ("later", 1)]


@pytest.mark.parametrize("key,value", [("enable.partition.eof", False),
                                       ("isolation.level", "read_uncommitted")])
def test_config_that_breaks_the_reader_is_refused(key, value):
    from streamfs.client import SelectionReader

    with pytest.raises(ValueError, match=f"kafka_config\\['{key}'\\]"):
        SelectionReader({"bootstrap.servers": "127.0.0.1:1", key: value}, "t")


def test_reader_config_ends_reads_soon_unless_the_user_says_otherwise():
    from streamfs.client import REQUIRED_CONFIG, reader_config

    config = reader_config({"bootstrap.servers": "b:9092"})
    # the broker holds the fetch that finds a partition's end this long (librdkafka: 500 ms)
    assert config["fetch.wait.max.ms"] == 50
    assert config["bootstrap.servers"] == "b:9092" and not config["enable.auto.commit"]
    assert reader_config({"fetch.wait.max.ms": 500})["fetch.wait.max.ms"] == 500
    assert {k: config[k] for k in REQUIRED_CONFIG} == REQUIRED_CONFIG
    # each reader in a group of its own: nothing it does moves another's offsets
    assert reader_config({})["group.id"] != reader_config({})["group.id"]


def test_a_result_whose_final_is_not_a_boolean_is_invalid():
    import json

    from streamfs.client import InvalidRecord, read_record

    result = {"v": 1, "kind": "result", "stream": "s", "algorithm": "saola", "version": 9,
              "selection": [{"feature": 1}]}
    assert read_record(json.dumps({**result, "final": True}).encode())["final"] is True
    assert "final" not in read_record(json.dumps(result).encode())  # absent: not final
    with pytest.raises(InvalidRecord, match="'final' is not true or false"):
        read_record(json.dumps({**result, "final": "yes"}).encode())


@pytest.mark.parametrize("call,needle", [
    (lambda r: r.updates(timeout=-1), "timeout must be a number of seconds more than 0, or None "
                                      "for no limit, not -1"),
    (lambda r: r.updates(timeout=float("nan")), "timeout must be .*, not nan"),
    (lambda r: r.updates(timeout=0), "timeout must be .*, not 0"),
    (lambda r: r.updates(timeout="5"), "timeout must be .*, not '5'"),
    (lambda r: r.messages(timeout=-0.5), "timeout must be .*, not -0.5"),
    (lambda r: r.messages(poll=-1), "poll must be a finite number of seconds, 0 or more, not -1"),
    (lambda r: r.messages(poll=float("nan")), "poll must be .*, not nan"),
    (lambda r: r.updates(run=0), r"run must be a whole number, 1 or more \(runs are numbered "
                                 r"from 1\), or None for every run, not 0"),
    (lambda r: r.updates(run=True), "run must be .*, not True"),  # True == 1: run 1 silently
    (lambda r: r.updates(run=2.0), "run must be .*, not 2.0"),
    (lambda r: r.current_selections(run=-1), "run must be .*, not -1"),
    (lambda r: r.updates(3), r"stream must be a stream id \(a string\), or None for every "
                             r"stream, not 3"),
    (lambda r: r.current_selections(b"s1"), "stream must be .*, not b's1'"),
    (lambda r: r.updates(until_final=True, to_end=True),
     "until_final and to_end do not go together"),
], ids=["timeout=-1", "timeout=nan", "timeout=0", "timeout='5'", "messages-timeout=-0.5",
        "poll=-1", "poll=nan", "run=0", "run=True", "run=2.0", "current-run=-1", "stream=3",
        "current-stream=bytes", "until_final+to_end"])
def test_reader_parameters_out_of_range_are_refused_at_the_call(kafka_config, call, needle):
    """updates(timeout=-1) timed out at once (NaN: never), run=0 matched nothing and run=True
    run 1, without a word; the generators checked nothing until the first result was asked
    for. Each is a ValueError naming the parameter and what it takes, before any read."""
    from streamfs.client import SelectionReader

    with SelectionReader(kafka_config, "never-read") as reader:
        with pytest.raises(ValueError, match=needle):
            call(reader)


def test_reader_topics_and_current_selection_s_arguments_are_checked(kafka_config):
    from streamfs.client import OutputReader, SelectionReader, current_selection

    for topic in ("", None):
        with pytest.raises(ValueError, match=f"a topic must be a topic name .*, not {topic!r}"):
            OutputReader(kafka_config, topic)
    for dead_letters in (7, ""):  # "" was taken for "no dead letters" and never read
        with pytest.raises(ValueError,
                           match=f"a topic must be a topic name .*, not {dead_letters!r}"):
            SelectionReader(kafka_config, "t", dead_letters=dead_letters)
    for interval in (0, float("inf"), "5"):
        with pytest.raises(ValueError, match=f"topic_check must be a finite number of seconds "
                           f"more than 0, not {re.escape(repr(interval))}"):
            SelectionReader(kafka_config, "t", topic_check=interval)
    with pytest.raises(ValueError, match=r"stream must be a stream id \(a string\), not None"):
        current_selection(None, kafka_config, "t")
    with pytest.raises(ValueError, match="run must be .*, not 0"):
        current_selection("s", kafka_config, "t", run=0)
    # no stream has the id '' (an unset variable): a wait for it never ended
    with pytest.raises(ValueError, match=r"stream must be a stream id, or None for every "
                                         r"stream, not '' \(empty\)"):
        SelectionReader(kafka_config, "t").updates("")
    with pytest.raises(ValueError, match=r"stream must be a stream id, not '' \(empty\)"):
        current_selection("", kafka_config, "t")


def _native_threads() -> int:
    import os

    return len(os.listdir("/proc/self/task"))


def test_a_closed_reader_leaves_no_kafka_client_running(kafka_config, topic_prefix):
    """Its topic check's admin client went on (threads, a broker connection) until the reader
    was collected: a service that keeps its readers piled them up (22 threads for 5)."""
    from streamfs.client import SelectionReader

    topic = load_catalogue(topic_prefix)["selected"].name
    before = _native_threads()
    kept = []
    for _ in range(3):
        with SelectionReader(kafka_config, topic) as reader:
            reader.current_selections()
        kept.append(reader)
    assert _native_threads() - before < 3, "a closed reader's client threads still run"


# --- topics deleted (or deleted and re-created) under a reader ------------------------------

def _delete_topic(kafka_config: dict, topic: str) -> None:
    """Delete ``topic``; returns once the broker has."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(kafka_config)  # kept until the answer: a client dropped never gives it
    admin.delete_topics([topic])[topic].result(timeout=30)


def test_a_topic_deleted_under_a_reader_ends_the_read(kafka_config, topic_prefix):
    """A consumer assigned a topic that is deleted gets nothing more from its polls, without an
    error: a `watch` polled on for 12 minutes without a word. The reader asks the broker while
    it reads (here every 0.2 s) and raises TopicMissing naming the topic."""
    from streamfs.client import TopicDeleted, TopicMissing

    topic = load_catalogue(topic_prefix)["dead_letter"].name
    _publish(kafka_config, topic, 1)
    with OutputReader(kafka_config, topic, topic_check=0.2) as reader:
        messages = reader.messages(timeout=30)  # the bound: TimeoutError without the check
        assert next(m for m in messages if m is not None)[1]["n"] == 1
        _delete_topic(kafka_config, topic)
        with pytest.raises(TopicMissing, match=f"topic '{topic}' was deleted while being read"
                           ) as raised:
            list(messages)
    assert isinstance(raised.value, TopicDeleted)


def test_a_topic_re_created_under_a_reader_ends_the_read(kafka_config, topic_prefix):
    """A topic deleted and made again under the same name between two looks is told by its
    topic id: the consumer would read on in the new topic from the old one's offsets (or from
    its start, those out of its range), mixing the two without a word."""
    from streamfs.client import TopicDeleted
    from streamfs.topics import create_topics

    topic = load_catalogue(topic_prefix)["dead_letter"].name
    _publish(kafka_config, topic, 1)
    with OutputReader(kafka_config, topic, topic_check=0.2) as reader:
        messages = reader.messages(timeout=30)
        assert next(m for m in messages if m is not None)[1]["n"] == 1
        # the reader is suspended in its generator meanwhile: it cannot look in between
        _delete_topic(kafka_config, topic)
        create_topics(kafka_config, load_catalogue(topic_prefix))
        _publish(kafka_config, topic, 2)  # the broker has the new topic's leader by now
        with pytest.raises(TopicDeleted, match=f"topic '{topic}' was deleted and re-created "
                           "while being read"):
            list(messages)


# --- until_final of a run replaced before its final result -----------------------------------

def test_until_final_of_a_run_replaced_before_its_final_says_so(kafka_config, topic_prefix):
    """`run=1` skipped run 2's results, so a run 1 replaced before its final (or whose results
    were compacted away) was waited for forever; a run final before it was replaced is
    still the run's final."""
    from streamfs.client import RunReplaced, SelectionReader

    topic = load_catalogue(topic_prefix)["selected"].name
    _put(kafka_config, topic, _result("w", 1), _result("w", 2, run=2),
         _result("c", 5, run=2),  # run 1's results compacted away
         _result("f", 1), _result("f", 2, final=True), _result("f", 3, run=2))
    with SelectionReader(kafka_config, topic) as reader:
        seen = []
        with pytest.raises(RunReplaced, match=r"^run 1 of 'w' was replaced by run 2 before its "
                           r"final result$") as raised:
            for result in reader.updates("w", until_final=True, run=1, timeout=30):
                seen.append(result)
        assert _versions(seen) == [("w", 1)]
        assert (raised.value.stream, raised.value.run, raised.value.newer) == ("w", 1, 2)
        with pytest.raises(RunReplaced, match=r"^no result of run 1 of 'c' is left on "
                           f"{re.escape(topic)}: it was replaced by run 2"):
            list(reader.updates("c", until_final=True, run=1, timeout=30))
        assert _versions(reader.updates("f", until_final=True, run=1, timeout=30)) == [
            ("f", 1), ("f", 2)]
        # every stream seen in run 1: 'w' is not final and never will be
        with pytest.raises(RunReplaced, match="run 1 of 'w' was replaced by run 2"):
            list(reader.updates(until_final=True, run=1, timeout=30))
        # a run waited for before it starts is not replaced by the runs before it
        with pytest.raises(TimeoutError, match="no final result for 'f'"):
            list(reader.updates("f", until_final=True, run=3, timeout=3))


class _ErrorEvent:
    """A consumer's error event, as ``Consumer.poll`` returns one (confluent-kafka makes no
    ``Message`` from Python)."""

    def __init__(self, err):
        self._err = err

    def error(self):
        return self._err

    def topic(self):
        return "streamfs.selected-features"


def test_a_readers_oauthbearer_login_that_lapsed_is_passed_over_with_a_line_a_minute(
        monkeypatch, caplog):
    """`watch` exited 77 ("refused the token") in 1 of 4 outages of the token endpoint: with
    its token expired, librdkafka's re-authentication of a connection failed and the
    consumer reported "Local: Authentication failure". A reader passes it over (it asks the
    endpoint again on its own); with credentials that do not renew it is still refused."""
    import logging

    from confluent_kafka import KafkaError

    from streamfs import broker
    from streamfs.broker import AccessDenied
    from streamfs.client import at_partition_end

    monkeypatch.setattr(broker, "_unreachable_said_at", {})
    caplog.set_level(logging.WARNING, logger="streamfs")
    event = _ErrorEvent(KafkaError(KafkaError._AUTHENTICATION,
                                   "FindCoordinator response error: Local: Authentication "
                                   "failure"))
    oauth = {"sasl.mechanism": "OAUTHBEARER"}
    assert at_partition_end(event, oauth, "t") is False
    assert at_partition_end(event, oauth, "t") is False
    assert [r.getMessage() for r in caplog.records] == [
        "the broker refused this client's OAUTHBEARER login after it had logged in "
        "(FindCoordinator response error: Local: Authentication failure): its token expired "
        "and no new one came; still trying: Ctrl-C stops"]
    with pytest.raises(AccessDenied, match="refused the credentials of user 'app'"):
        at_partition_end(event, {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "app"},
                         "t")


def test_the_time_a_caller_holds_a_result_is_not_the_readers(kafka_config, topic_prefix,
                                                             monkeypatch):
    """`watch --until-final --timeout 30` spent its 30 s drawing the table of a first version
    of 100,000 features and timed out with the final already on the topic (exit 3, "no final
    result"). The timeout counts the reader's own time: a clock that jumps 100 s while the
    caller holds the first result does not end a wait of 60 s."""
    import time as real_time
    from types import SimpleNamespace

    from streamfs import client
    from streamfs.client import SelectionReader

    jump = [0.0]
    monkeypatch.setattr(client, "time", SimpleNamespace(
        monotonic=lambda: real_time.monotonic() + jump[0]))
    topics = load_catalogue(topic_prefix)
    _put(kafka_config, topics["selected"].name, _result("held", 1),
         _result("held", 2, final=True))
    seen = []
    with SelectionReader(kafka_config, topics["selected"].name) as reader:
        for result in reader.updates("held", until_final=True, timeout=60):
            seen.append(result["version"])
            jump[0] += 100.0  # the caller's time: drawing, writing, its own work
    assert seen == [1, 2]


def test_a_reader_says_when_the_broker_answers_again(kafka_config, topic_prefix, broker_outage,
                                                     monkeypatch, caplog):
    """It said "the broker does not answer ...; still trying" and then nothing, although it
    went on reading once the broker was back."""
    from streamfs import broker

    monkeypatch.setattr(broker, "_unreachable_said_at", {})  # nothing said before this test
    topic = load_catalogue(topic_prefix)["dead_letter"].name
    with OutputReader(kafka_config, topic, topic_check=1.0) as reader:
        reader.assign()
        messages = reader.messages(timeout=300)

        def said() -> list[str]:
            return [r.getMessage() for r in caplog.records if r.name == "streamfs"]

        def read_until(words: str) -> None:
            """Until the reader's last line has ``words`` (a stale "does not answer" of the
            consumer may come after the first "answers again": then another follows)."""
            for _ in messages:
                if said() and words in said()[-1]:
                    return

        with broker_outage():
            read_until("the broker does not answer")
        read_until("the broker answers again")  # TimeoutError after 300 s if never


@pytest.mark.kafka
def test_refused_credentials_are_not_said_to_be_a_broker_away(secured_kafka, caplog):
    """A reader made its clients before it checked the broker: their threads said "the broker
    does not answer; still trying" just before the reader raised that the credentials were
    refused, and the next reader to succeed said "the broker answers again"."""
    import logging

    from streamfs.broker import AccessDenied
    from streamfs.client import current_selection

    for wrong in ({"sasl.password": "wrong"}, {"sasl.mechanism": "SCRAM-SHA-256"}):
        with caplog.at_level(logging.WARNING, logger="streamfs"), pytest.raises(AccessDenied):
            current_selection("x", {**secured_kafka.config("app"), **wrong},
                              "p.selected-features")
    # (librdkafka's own lines go to streamfs.kafka, shown with --verbose only)
    assert [r.getMessage() for r in caplog.records if r.name == "streamfs"] == []


def test_a_rejection_says_where_its_input_was_read_and_a_dropped_stream_says_so():
    """A dead letter of refused input names its position; the letter of a stream the worker
    dropped (STREAMFS_OPEN_IDLE_TIMEOUT) has none: its reason alone, not 'None[None]'."""
    from streamfs.client import StreamRejected, where_read

    refused = {"stream": "s", "reason": "bad block", "topic": "t", "partition": 2, "offset": 9}
    dropped = {"stream": "s", "reason": "stream 's' (run 1) was dropped by the worker", "run": 1}
    assert where_read(refused) == "t[2]@9" and where_read(dropped) == "-"
    assert str(StreamRejected(refused)) == (
        "the worker rejected input of stream 's' (t[2]@9): bad block")
    assert str(StreamRejected(dropped)) == "stream 's' (run 1) was dropped by the worker"
