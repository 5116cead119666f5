"""Read selections from the selected-features topic (for downstream models and tests).

The topic is compacted and keyed by stream id, so reading it from the beginning gives every
stream's latest selection even to a subscriber that starts late.

Records that are not valid streamfs messages (undecodable, without the envelope, a result or
dead letter without the fields the readers use) are skipped: each kind of problem is logged once
on the ``streamfs.client`` logger with the record's topic, partition and offset, and every skip
is counted in the reader's ``skipped``.
"""

from __future__ import annotations

import base64
import logging
import math
import time
import uuid
from numbers import Integral, Real
from typing import Any, Callable, Iterable, Iterator, Literal

from streamfs.broker import denied, is_denied, lapsed_login, say_answers_again, say_still_trying
from streamfs.codec import CodecError, decode, decode_any

log = logging.getLogger("streamfs.client")
#: what a timeout of a stream with no result at all adds (the likely cause: a mistyped id)
ID_HINT = " (none of its results at all: is {stream!r} the stream's id?)"
#: the same where only results published since the reader started count (``start="end"``)
NEW_ONLY_HINT = " (none of its results since the watch began: earlier ones are not read)"

#: consumer settings the readers depend on: EOF events end ``to_end`` reads and tell when the
#: topics have been read to their end; ``read_committed`` shows each version exactly once
REQUIRED_CONFIG = {"enable.partition.eof": True, "isolation.level": "read_committed"}

#: consumer settings the readers start from (``kafka_config`` overrides them). A partition's
#: end is known from the first fetch that finds no more records, which the broker holds for
#: ``fetch.wait.max.ms`` (librdkafka: 500 ms); 50 ms makes a ``current_selection`` or an
#: ``until_final`` read end that much sooner, for at most 20 idle fetches a second
DEFAULT_CONFIG = {"fetch.wait.max.ms": 50}


#: how often a reader asks the broker whether the topics it reads are still there, and still
#: the same topics (their ids): a consumer assigned a topic that is deleted gets nothing more
#: from its polls and no error (a `watch` polled on for 12 minutes without a word)
TOPIC_CHECK_SECONDS = 5.0


class TopicMissing(RuntimeError):
    """A topic to read does not exist on the broker (no worker has created the topics yet)."""


class TopicDeleted(TopicMissing):
    """A topic was deleted while being read, or deleted and re-created under its name (another
    topic id): what follows is not on it."""


class InvalidRecord(ValueError):
    """A record the readers cannot use; ``kind`` names the problem (one warning per kind)."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind} ({detail})" if detail else kind)
        self.kind = kind


def where_read(letter: dict) -> str:
    """Where a dead letter's input was read: ``topic[partition]@offset``; ``-`` for the letter
    of a stream the worker dropped (STREAMFS_OPEN_IDLE_TIMEOUT), which refused no input."""
    if letter.get("topic") is None:
        return "-"
    return f"{letter.get('topic')}[{letter.get('partition')}]@{letter.get('offset')}"


class RunReplaced(RuntimeError):
    """The run waited for (``updates(stream, run=N, until_final=True)``) was replaced by a newer
    run of its stream without a final result, or its results are no longer on the compacted
    topic: it will not have one. ``stream``, ``run``, ``newer`` (the newest run seen)."""

    def __init__(self, stream: str, run: int, newer: int, seen: bool, *, topic: str) -> None:
        if seen:
            text = f"run {run} of {stream!r} was replaced by run {newer} before its final result"
        else:
            text = (f"no result of run {run} of {stream!r} is left on {topic}: it was replaced "
                    f"by run {newer} (the topic keeps each stream's latest result)")
        super().__init__(text)
        self.stream, self.run, self.newer = stream, run, newer


class StreamRejected(RuntimeError):
    """The worker dead-lettered input of a stream being waited for: its final result, if one
    comes, leaves that input out; or it dropped the stream (STREAMFS_OPEN_IDLE_TIMEOUT: no
    final result will come). ``letter`` is the dead letter (``reason``; ``topic``,
    ``partition``, ``offset`` of refused input)."""

    def __init__(self, letter: dict) -> None:
        if letter.get("topic") is None:  # no input refused: the reason says it all
            super().__init__(letter["reason"])
        else:
            super().__init__(f"the worker rejected input of stream {letter['stream']!r} "
                             f"({where_read(letter)}): {letter['reason']}")
        self.letter = letter


def _is_int(value: Any) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_list(value: Any) -> bool:
    return isinstance(value, list)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


#: the fields of a result that readers use (topics/README.md, "Result messages"): key, check,
#: what it must be; ``run`` may be absent (results before runs existed: run 1), ``final`` too
#: (not final)
_RESULT_FIELDS = (("stream", _is_str, "a string"), ("algorithm", _is_str, "a string"),
                  ("version", _is_int, "an integer"), ("selection", _is_list, "a list"),
                  ("run", _is_int, "an integer"), ("final", _is_bool, "true or false"))


def _check_result(message: dict) -> None:
    """Raise :class:`InvalidRecord` naming what is missing or wrong in a result."""
    missing = [repr(key) for key, _, _ in _RESULT_FIELDS
               if key not in ("run", "final") and key not in message]
    if missing:
        raise InvalidRecord(f"result without {', '.join(missing)}")
    for key, ok, what in _RESULT_FIELDS:
        if key in message and not ok(message[key]):
            raise InvalidRecord(f"result whose {key!r} is not {what}")
    if not all(isinstance(i, dict) and _is_int(i.get("feature")) for i in message["selection"]):
        raise InvalidRecord("result with a 'selection' item without an integer 'feature'")
    # what `watch` shows and decides on besides (its table, its exit code): a record that
    # gets these wrong is skipped like the others, not a traceback in the reader
    counters = message.get("counters", {})
    if not isinstance(counters, dict) or not _is_int(counters.get("rejected_messages", 0)):
        raise InvalidRecord("result whose 'counters' is not a map of counts")
    if not isinstance(message.get("params", {}), dict):
        raise InvalidRecord("result whose 'params' is not a map")
    for item in message["selection"]:
        score = item.get("score")
        if score is not None and not _is_number(score):
            raise InvalidRecord("result with a 'selection' item whose 'score' is not a number")
        affiliated = item.get("affiliated", [])
        if not (_is_list(affiliated) and all(_is_list(a) and a and _is_int(a[0])
                                             for a in affiliated)):
            raise InvalidRecord("result with a 'selection' item whose 'affiliated' is not a "
                                "list of [feature, strength, name]")


def _check_dead_letter(message: dict) -> None:
    if not isinstance(message.get("reason"), str):
        raise InvalidRecord("dead letter without a 'reason'")


_CHECKS = {"result": _check_result, "dead_letter": _check_dead_letter}
#: the kinds of message the output topics carry
OUTPUT_KINDS = tuple(_CHECKS)


def read_record(value: bytes, kinds: Iterable[str] = OUTPUT_KINDS) -> dict:
    """Decode an output record (msgpack or JSON) of one of ``kinds`` and check a result's or
    dead letter's fields; :class:`InvalidRecord` says what is wrong."""
    try:
        message = decode_any(value)
    except CodecError as exc:
        raise InvalidRecord("not a streamfs message", str(exc)) from None
    kind = message.get("kind")
    if kind not in kinds:  # (an input message, say, that someone sent to an output topic)
        wanted = " or ".join(k.replace("_", " ") for k in kinds)
        raise InvalidRecord(f"not a {wanted}", f"kind {kind!r}")
    if (check := _CHECKS.get(kind)) is not None:
        check(message)
    return message


class Skipped:
    """Counts the records a reader skips by kind of problem (``counts``); logs the first of
    each kind with where it is, so a bad producer is seen without flooding the log."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def __call__(self, problem: InvalidRecord, topic: str, partition: int, offset: int) -> None:
        if problem.kind not in self.counts:
            log.warning("skipped %s[%d]@%d: %s (records with this problem are skipped and "
                        "counted from now on)", topic, partition, offset, problem)
        self.counts[problem.kind] = self.counts.get(problem.kind, 0) + 1

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class Refused:
    """Counts the dead letters of runs a stream never accepted (``run_refused``: its id re-used
    by another producer) by stream and the refused run's token (``counts``); logs the first of
    each run: a refused publish dead-letters every one of its messages."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str | None, str | None], int] = {}

    def __call__(self, letter: dict) -> None:
        key = (letter.get("stream"), _run_token(letter))
        if key not in self.counts:
            log.warning("input of stream %r from another run was refused: %s (that run's other "
                        "refused messages are counted, not shown)", key[0], letter["reason"])
        self.counts[key] = self.counts.get(key, 0) + 1


def original_bytes(letter: dict) -> bytes | None:
    """A dead letter's ``original`` input bytes, whichever format the worker wrote (msgpack's
    bytes, or the JSON format's base64 text); None where there are none or they cannot be
    read (a letter not written by a streamfs worker)."""
    original = letter.get("original")
    if isinstance(original, str):
        try:
            return base64.b64decode(original, validate=True)
        except ValueError:  # binascii.Error
            return None
    return original if isinstance(original, bytes) else None


def _original(letter: dict) -> dict | None:
    """The streamfs message of a dead letter's ``original`` input; None where there is none
    (empty, truncated or undecodable input, or no ``original``)."""
    original = letter.get("original")
    try:
        if isinstance(original, str):  # the JSON output format's base64
            original = base64.b64decode(original, validate=True)
        return decode(original) if isinstance(original, bytes) else None
    except ValueError:  # CodecError, or base64's binascii.Error
        return None


def _run_token(letter: dict) -> str | None:
    """The producer's run token in a dead letter's original message; None where it cannot be
    read (truncated, not a streamfs message, a producer without tokens)."""
    token = (_original(letter) or {}).get("run")
    return token if isinstance(token, str) else None


def _unreadable(letter: dict) -> bool:
    """The worker could not read the letter's input at all (empty, undecodable, over the size
    limit): nothing in it says which stream or run it was meant for but its key."""
    return "original" in letter and _original(letter) is None


#: where an input message was read: (topic, partition, offset)
Position = tuple[str, int, int]


def _position(fields: Any) -> Position | None:
    """The input position in ``fields`` (a dead letter, or a result's ``open_input``); None
    where a field is missing or not of its type."""
    if not isinstance(fields, dict):
        return None
    topic, partition, offset = (fields.get(k) for k in ("topic", "partition", "offset"))
    if _is_str(topic) and _is_int(partition) and _is_int(offset):
        return topic, partition, offset
    return None


def _record_time(msg: Any) -> float | None:
    """A record's Kafka timestamp in seconds since the epoch, None where it has none."""
    from confluent_kafka import TIMESTAMP_NOT_AVAILABLE

    kind, millis = msg.timestamp()
    return None if kind == TIMESTAMP_NOT_AVAILABLE or millis < 0 else millis / 1000


def first_offset(consumer: Any, topic: str, partition: int) -> int:
    """The partition's first offset, for assigning ``consumer`` there explicitly: the logical
    OFFSET_BEGINNING costs a fresh consumer a 500 ms retry of its offset query (librdkafka),
    measured 0.56 s to the first result instead of 0.04 s. Should retention remove records in
    between, auto.offset.reset=earliest applies. Where the broker cannot answer (a topic just
    created, its leader not known yet: NOT_LEADER_FOR_PARTITION), the logical offset, which
    librdkafka retries on its own; an error that lasts surfaces when consuming."""
    from confluent_kafka import OFFSET_BEGINNING

    return _watermark(consumer, topic, partition, 0, OFFSET_BEGINNING)


def end_offset(consumer: Any, topic: str, partition: int) -> int:
    """The partition's end (the next record's offset), as :func:`first_offset` does: a record
    produced after this call is read, unlike with a logical OFFSET_END resolved later."""
    from confluent_kafka import OFFSET_END

    return _watermark(consumer, topic, partition, 1, OFFSET_END)


def _watermark(consumer: Any, topic: str, partition: int, which: int, fallback: int) -> int:
    from confluent_kafka import KafkaException, TopicPartition

    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)[which]
    except KafkaException:
        return fallback


class TopicCheck:
    """Asks the broker, at most every ``interval`` seconds, whether ``topics`` are still the
    topics they were when :meth:`start` was called: :meth:`__call__` raises
    :class:`TopicDeleted` for one deleted since, or deleted and re-created (its topic id
    changed: the consumer would read the new topic on from the old one's offsets, or from its
    start where those are beyond its end, without a word).

    The broker answers on the admin client's thread: a call only looks whether it has, so a
    poll loop can make one every turn. A question the broker does not answer (gone, timed out)
    is asked again at the next interval: an outage is not a deleted topic."""

    def __init__(self, kafka_config: dict[str, Any], topics: Iterable[str],
                 interval: float = TOPIC_CHECK_SECONDS) -> None:
        _check_interval(interval)
        self.topics = tuple(topics)
        self.interval = interval
        #: topic -> its id when :meth:`start` was called (as the broker first answered)
        self.ids: dict[str, str] = {}
        self._kafka_config = kafka_config
        # kept: an admin client dropped never completes its futures. Made at the first
        # question, once the reader found the broker: one made with the reader, its thread
        # said "the broker does not answer; still trying" of credentials about to be refused
        self._admin: Any = None
        self._asked: dict[str, Any] | None = None  # a question the broker has yet to answer
        self._first = False  # the question in flight is the one :meth:`start` asked
        self._due = math.inf

    def start(self) -> None:
        """Ask the topics' ids now, without waiting: what later answers are compared with."""
        self.ids.clear()
        self._asked, self._first = self._ask(), True

    def wait(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the answer to the question in flight (the ids
        :meth:`start` asked for), and judge it."""
        import concurrent.futures

        if self._asked is not None:
            concurrent.futures.wait(list(self._asked.values()), timeout=timeout)
        self()

    def close(self) -> None:
        """Drop the admin client (its threads and broker connection went on after the reader
        closed) and the question in flight."""
        self._admin, self._asked, self._due = None, None, math.inf

    def _ask(self) -> dict[str, Any]:
        from confluent_kafka import TopicCollection
        from confluent_kafka.admin import AdminClient

        from streamfs.broker import make_client

        if self._admin is None:
            self._admin = make_client(AdminClient, self._kafka_config)
        self._admin.poll(0)  # serve its log lines (they wait on its queue)
        return self._admin.describe_topics(TopicCollection(list(self.topics)),
                                           request_timeout=30)

    def __call__(self) -> None:
        """Raise :class:`TopicDeleted` if the broker has answered that a topic was deleted
        or re-created; ask again if the last answer is ``interval`` seconds old."""
        from confluent_kafka import KafkaError, KafkaException

        if self._asked is None:
            if time.monotonic() >= self._due:
                self._asked, self._first = self._ask(), False
            return
        if not all(future.done() for future in self._asked.values()):
            return
        answered, self._asked = self._asked, None
        self._due = time.monotonic() + self.interval
        for name, future in answered.items():
            try:
                topic_id = str(future.result().topic_id)
            except KafkaException as exc:
                # the first answer may come from a broker that has yet to learn of a topic
                # just created (the reader found it): a topic gone stays gone at the next look
                if exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART and not self._first:
                    raise TopicDeleted(f"topic {name!r} was deleted while being read") from None
                continue
            say_answers_again()  # after "the broker does not answer", if that was said
            known = self.ids.setdefault(name, topic_id)
            if known != topic_id:
                raise TopicDeleted(f"topic {name!r} was deleted and re-created while being read "
                                   f"(topic id {known} when reading started, {topic_id} now)")


def _check_config(kafka_config: dict[str, Any]) -> None:
    for key, value in REQUIRED_CONFIG.items():
        if key in kafka_config and str(kafka_config[key]).lower() != str(value).lower():
            raise ValueError(f"kafka_config[{key!r}] = {kafka_config[key]!r}: the readers need "
                             f"{value!r} (leave the key out)")


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _check_timeout(timeout: Any) -> None:
    """``timeout`` of a read: seconds more than 0 (``inf``: no limit, as None)."""
    if timeout is not None and not (_is_number(timeout) and timeout > 0):  # NaN: refused
        raise ValueError(f"timeout must be a number of seconds more than 0, or None for no "
                         f"limit, not {timeout!r}")


def _check_interval(interval: Any) -> None:
    if not (_is_number(interval) and 0 < interval < math.inf):
        raise ValueError(f"topic_check must be a finite number of seconds more than 0, not "
                         f"{interval!r}")


def _check_run(run: Any) -> None:
    if run is not None and not (_is_int(run) and run >= 1):
        raise ValueError(f"run must be a whole number, 1 or more (runs are numbered from 1), "
                         f"or None for every run, not {run!r}")


def _check_stream(stream: Any, *, optional: bool = True) -> None:
    every = ", or None for every stream" if optional else ""
    if not (isinstance(stream, str) or (optional and stream is None)):
        raise ValueError(f"stream must be a stream id (a string){every}, not {stream!r}")
    if stream == "":  # no stream has it: a wait for it never ends
        raise ValueError(f"stream must be a stream id{every}, not '' (empty)")


def at_partition_end(msg: Any, kafka_config: dict[str, Any], topic: str) -> bool:
    """For an error event ``msg`` of a reader's consumer (one of ``kafka_config`` reading
    ``topic``, which has logged in: it was assigned its partitions): True for a partition's
    end, False for one to pass over; raise :class:`~streamfs.broker.AccessDenied` for an ACL
    that denies the read, ``RuntimeError`` for any other error. An OAUTHBEARER login that
    lapsed (:func:`~streamfs.broker.lapsed_login`) is passed over with a WARNING line a
    minute: `watch` had exited 77 on it in 1 of 4 outages of the token endpoint."""
    from confluent_kafka import KafkaError

    err = msg.error()
    if err.code() == KafkaError._PARTITION_EOF:
        return True
    if err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
        return False  # the reader's own group, which it never uses: it reads from set offsets
    if (lapsed := lapsed_login(kafka_config, err)) is not None:
        say_still_trying("login", lapsed)
        return False  # the client asks the token endpoint again on its own
    if is_denied(err):
        raise denied(kafka_config, err, f"reading topic {msg.topic() or topic!r}",
                     "READ and DESCRIBE on it")
    raise RuntimeError(f"consumer error on {topic}: {err}")


def check_topic_access(meta: Any, kafka_config: dict[str, Any], topic: str) -> None:
    """:class:`~streamfs.broker.AccessDenied` if the metadata ``meta`` of ``topic`` says the
    user may not see it: the topic may well exist, so not :class:`TopicMissing`."""
    if meta is not None and is_denied(meta.error):
        raise denied(kafka_config, meta.error, f"reading topic {topic!r}",
                     "READ and DESCRIBE on it")


def reader_config(kafka_config: dict[str, Any]) -> dict[str, Any]:
    """The consumer configuration of a reader: a group of its own that commits nothing,
    :data:`DEFAULT_CONFIG` unless ``kafka_config`` says otherwise, and :data:`REQUIRED_CONFIG`."""
    return {
        "group.id": f"streamfs-reader-{uuid.uuid4().hex}",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        **DEFAULT_CONFIG,
        **kafka_config,
        **REQUIRED_CONFIG,
    }


class OutputReader:
    """Reads decoded messages (msgpack or JSON) of output topics from their beginning, or with
    ``start="end"`` only what is published after :meth:`assign`.

    With several topics (say results and dead letters), messages of the topics interleave in
    arrival order. ``kafka_config`` may not change :data:`REQUIRED_CONFIG` (``ValueError``).
    While reading, every ``topic_check`` seconds (:data:`TOPIC_CHECK_SECONDS`) the reader asks
    the broker whether the topics are still there and the same (:class:`TopicCheck`).
    """

    def __init__(self, kafka_config: dict[str, Any], topic: str, *more_topics: str,
                 start: Literal["beginning", "end"] = "beginning",
                 topic_check: float = TOPIC_CHECK_SECONDS,
                 kinds: Iterable[str] = OUTPUT_KINDS) -> None:
        from streamfs.broker import with_kafka_logger

        _check_config(kafka_config)
        _check_interval(topic_check)
        if start not in ("beginning", "end"):
            raise ValueError(f"start must be 'beginning' or 'end', not {start!r}")
        for name in (topic, *more_topics):
            if not (isinstance(name, str) and name):
                raise ValueError(f"a topic must be a topic name (a non-empty string), not "
                                 f"{name!r}")
        kafka_config = with_kafka_logger(kafka_config)
        self._kafka_config = kafka_config
        self._offset = first_offset if start == "beginning" else end_offset
        #: start="end": where the first read began, per partition; a later call reads from
        #: there again (from the end as it was then, it lost what came between the calls)
        self._began: dict[tuple[str, int], int] | None = None if start == "beginning" else {}
        self.topic = topic
        self.topics = (topic, *more_topics)
        self.skipped = Skipped()
        self._kinds = tuple(kinds)  # the messages it yields; others are skipped
        #: every partition was read to its end (at once) since :meth:`messages` started
        self.caught_up = False
        #: the Kafka timestamp (seconds since the epoch, UTC) of the message last yielded: when
        #: the worker wrote it; None where the record carries none
        self.last_timestamp: float | None = None
        self._n_partitions: int | None = None
        # made once the broker is found (assign): one made here tried to connect at once, and
        # said "the broker does not answer; still trying" of credentials refused meanwhile
        self._consumer: Any = None
        self._topic_check = TopicCheck(kafka_config, self.topics, topic_check)

    def assign(self) -> int:
        """Assign every partition of the topics from its first offset (or end) now, rather than
        when :meth:`messages` starts (which it does unless this was called before it); returns
        the number of partitions. :class:`TopicMissing` if a topic does not exist."""
        from confluent_kafka import Consumer, TopicPartition

        from streamfs.broker import check_reachable, make_client

        if self._n_partitions is not None:
            return self._n_partitions
        check_reachable(self._kafka_config)  # BrokerUnreachable naming the address, at once
        if self._consumer is None:
            self._consumer = make_client(Consumer, reader_config(self._kafka_config))
        self._topic_check.start()  # the topics' ids, asked beside the offsets below
        assignment = []
        for topic in self.topics:
            meta = self._consumer.list_topics(topic, timeout=30).topics.get(topic)
            check_topic_access(meta, self._kafka_config, topic)
            if meta is None or meta.error is not None or not meta.partitions:
                from streamfs.topics import missing_topic_message

                raise TopicMissing(missing_topic_message(topic))
            assignment += [TopicPartition(topic, p, self._start(topic, p))
                           for p in meta.partitions]
        self._consumer.assign(assignment)
        self._topic_check.wait(30)  # answered by now, as a rule: a later answer is taken then
        self._n_partitions = len(assignment)
        return self._n_partitions

    def _start(self, topic: str, partition: int) -> int:
        """The offset a read of ``partition`` starts at: its first, or (``start="end"``) its
        end when the reader first assigned it."""
        if self._began is None:
            return self._offset(self._consumer, topic, partition)
        if (topic, partition) not in self._began:
            self._began[topic, partition] = self._offset(self._consumer, topic, partition)
        return self._began[topic, partition]

    def messages(self, *, to_end: bool = False, timeout: float | None = None,
                 poll: float = 0.5) -> Iterator[tuple[str, dict] | None]:
        """Yield ``(topic, decoded message)`` in arrival order (per partition); ``None`` after each
        ``poll`` seconds without one, and when every partition has been read to its end (then
        :attr:`caught_up` is true), so that callers can watch a clock or another topic.
        ``to_end``: stop at the end of the topics as they are now. ``timeout``: raise
        ``TimeoutError`` after this many seconds of reading (more than 0; None: no limit); the
        time the caller holds what was yielded does not count. A topic deleted
        (or re-created) while being read raises :class:`TopicDeleted` (a
        :class:`TopicMissing`), at most ``topic_check`` seconds and a broker's answer after.
        ``ValueError`` at once for a ``timeout`` or ``poll`` out of range. Each call reads
        from the start again: the topics' beginning, or (``start="end"``) where the first
        read began."""
        _check_timeout(timeout)
        if not (_is_number(poll) and 0 <= poll < math.inf):
            raise ValueError(f"poll must be a finite number of seconds, 0 or more, not {poll!r}")
        return self._messages(to_end, timeout, poll)

    def _messages(self, to_end: bool, timeout: float | None,
                  poll: float) -> Iterator[tuple[str, dict] | None]:
        n_parts = self.assign()
        self._n_partitions = None  # the next call reads from the start again
        self.caught_up = False
        at_end: set[tuple[str, int]] = set()
        # the reader's own time: the caller's (`watch` drawing a table of 100,000 features
        # took 56 s) moves the deadline on, or a final already read could time out
        spent, mark = 0.0, time.monotonic()
        while True:
            now = time.monotonic()
            spent, mark = spent + now - mark, now
            if timeout is not None and spent > timeout:
                raise TimeoutError(f"nothing more on {', '.join(self.topics)} after {timeout} s")
            # busy or idle: a reader of two topics that one keeps busy never idles
            self._topic_check()
            msg = self._consumer.poll(poll)
            item: tuple[str, dict] | None = None
            if msg is None:
                pass
            elif msg.error():
                self._note_end(msg, at_end)
                if len(at_end) < n_parts:
                    continue
                if to_end:
                    return
                self.caught_up = True
            else:
                at_end.discard((msg.topic(), msg.partition()))
                message = self._decoded(msg)
                if message is None:
                    continue
                item = msg.topic(), message
                self.last_timestamp = _record_time(msg)
            spent += time.monotonic() - mark
            yield item
            mark = time.monotonic()

    def _note_end(self, msg: Any, at_end: set[tuple[str, int]]) -> None:
        """Note a partition's end; raise on any other consumer error."""
        if at_partition_end(msg, self._kafka_config, self.topic):
            at_end.add((msg.topic(), msg.partition()))

    def _decoded(self, msg: Any) -> dict | None:
        """The record's message, or None for a tombstone or an invalid record (skipped)."""
        if msg.value() is None:
            return None
        try:
            return read_record(msg.value(), self._kinds)
        except InvalidRecord as problem:
            self.skipped(problem, msg.topic(), msg.partition(), msg.offset())
            return None

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
        self._topic_check.close()

    def __enter__(self) -> "OutputReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Finals:
    """What ``until_final`` waits for: ``stream`` (or every stream seen) in its newest run seen
    (or ``run``) with a final latest result; the dead letters of each stream by run; and the
    runs after ``run`` that replaced it."""

    def __init__(self, stream: str | None, run: int | None, refused: Refused) -> None:
        self.stream = stream
        self.run = run
        self.refused = refused
        self.newest: dict[str, int] = {}
        self.final: dict[str, bool] = {}
        self.letters: dict[str, dict[Any, dict]] = {}
        #: (stream, run) -> where the run's ``open`` was read, as its results say (None: they
        #: do not, results of a worker before ``open_input``)
        self.opens: dict[tuple[str, int], Position | None] = {}
        #: stream -> dead letters without a run, the newest of each input partition (None: no
        #: position) and readability: a stream's dead letters are one key's, in one partition
        #: of the dead-letter topic, in the order the worker read their input
        self.runless: dict[str, dict[tuple[tuple[str, int] | None, bool], dict]] = {}
        self.held: set[tuple[str, int, Position | None]] = set()  # logged: (stream, run, where)
        #: stream -> the newest run seen after ``run`` (whose results are not taken): ``run``
        #: will not get a final result after it
        self.newer: dict[str, int] = {}

    def result(self, result: dict) -> None:
        # a stream's results share a partition, in order: the last run seen is the newest
        sid, run = result["stream"], result.get("run", 1)
        self.newest[sid] = run
        self.final[sid] = bool(result.get("final"))
        self.opens[(sid, run)] = _position(result.get("open_input"))

    def newer_run(self, result: dict) -> None:
        """A result of a run after ``run``: that run replaced ``run``."""
        sid = result["stream"]
        self.newer[sid] = max(self.newer.get(sid, 0), result.get("run", 1))

    def dead_letter(self, letter: dict) -> None:
        sid = letter.get("stream")
        if letter.get("run_refused"):
            # input of a run the stream never accepted (a re-used id): no run's, but its
            # producer should hear of it
            self.refused(letter)
        elif not isinstance(sid, str):
            return
        elif letter.get("run") is not None:
            # the run's first: the cause (a refused open); later ones follow from it ("data
            # before 'open'" for each message after it)
            self.letters.setdefault(sid, {}).setdefault(letter["run"], letter)
        else:
            where = _position(letter)
            key = (where[:2] if where else None, not _unreadable(letter))
            self.runless.setdefault(sid, {})[key] = letter

    def waiting(self) -> list[str]:
        """The watched streams without a final result (``stream`` even before its first)."""
        watched = [self.stream] if self.stream is not None else list(self.final)
        return [sid for sid in watched if not self.final.get(sid)]

    def all_final(self) -> bool:
        return bool(self.final) and not self.waiting()

    def replaced(self) -> tuple[str, int, int, bool] | None:
        """A watched stream whose run ``run`` is not final but was replaced by a newer run: the
        stream, ``run``, the newest run seen, and whether a result of ``run`` was read (none:
        its results were compacted away, or it had none). Without ``run``, the newest run of
        each stream is the one watched: none is replaced."""
        if self.run is None:
            return None
        for sid in self.waiting():
            if sid in self.newer:
                return sid, self.run, self.newer[sid], sid in self.final
        return None

    def rejection(self) -> dict | None:
        """A dead letter of the watched run of a stream not final: one of that run, or one
        without a run that :meth:`_may_be_of` the run."""
        for sid in self.waiting():
            run = self.run or self.newest.get(sid, 1)
            letter = self.letters.get(sid, {}).get(run) or self._runless_of(sid, run)
            if letter is not None:
                return letter
        return None

    def _runless_of(self, sid: str, run: int) -> dict | None:
        """A dead letter without a run that counts against ``run`` of ``sid``; those held
        until the run's first result are logged, once each."""
        held = []
        for (place, readable), letter in self.runless.get(sid, {}).items():
            verdict = self._may_be_of(sid, run, letter, place, readable)
            if verdict:
                return letter
            if verdict is None:
                held.append(letter)
        for letter in held:
            if (key := (sid, run, _position(letter))) not in self.held:
                self.held.add(key)
                log.warning("input of stream %r that the worker could not read was "
                            "dead-lettered (%s: %s): it fails run %d only if it came after the "
                            "run's open, which the run's first result will tell", sid,
                            where_read(letter), letter["reason"], run)
        return None

    def _may_be_of(self, sid: str, run: int, letter: dict, place: tuple[str, int] | None,
                   readable: bool) -> bool | None:
        """Whether a dead letter without a run (the worker read its input before it knew the
        stream's run: no open stream under that key, or no readable key) may be input of
        ``run`` of ``sid``; None: not known yet.

        Where the run's results say where its ``open`` was read: only if it came after that,
        in the same input partition (a letter from before the open is not the run's). Before
        the run's first result, where its open was is not known: a letter of unreadable input
        waits for it (a stale record under the same key is one), any other counts (a keyless
        producer's every message is dead-lettered without a run)."""
        if (sid, run) not in self.opens:
            return None if place is not None and not readable else True
        opened = self.opens[(sid, run)]
        if opened is None or place is None:  # cannot be ordered: counts, as it always did
            return True
        return place == opened[:2] and letter["offset"] > opened[2]


class SelectionReader(OutputReader):
    """Reads result messages (decoded dicts) of the selected-features topic and, given
    ``dead_letters`` (the dead-letter topic), notices when the worker rejects a stream's input.
    Dead letters of a run the stream never accepted (its id re-used) are logged once per stream
    and run, and counted in ``refused.counts``.

    ``start="end"``: only results published after :meth:`assign` (or the first read); each
    call of :meth:`updates` reads from there again, as with the default start each reads from
    the topic's beginning.

    >>> from streamfs.topics import load_catalogue
    >>> topics = load_catalogue("streamfs.")   # the topic names of a --topic-prefix
    >>> topics["selected"].name, topics["dead_letter"].name
    ('streamfs.selected-features', 'streamfs.dead-letter')
    """

    def __init__(self, kafka_config: dict[str, Any], topic: str, *,
                 dead_letters: str | None = None,
                 start: Literal["beginning", "end"] = "beginning",
                 topic_check: float = TOPIC_CHECK_SECONDS) -> None:
        # "" is refused with the other topic names, not read as "no dead letters"
        super().__init__(kafka_config, topic, *([] if dead_letters is None else [dead_letters]),
                         start=start, topic_check=topic_check)
        self.refused = Refused()
        self._new_only = start == "end"

    def updates(self, stream: str | None = None, *, until_final: bool = False,
                timeout: float | None = None, to_end: bool = False,
                run: int | None = None,
                on_caught_up: Callable[[], None] | None = None) -> Iterator[dict]:
        """Yield results in arrival order (per partition), from the start of the topic.

        ``to_end``: stop at the end of the topic as it is now. ``until_final``: read every
        partition to its end, then stop as soon as the latest result of ``stream`` (or of every
        stream seen, if ``stream`` is None; with none seen yet, wait for one) in its newest run
        is final: the final of a run replaced since does not count. With ``dead_letters``, a
        dead letter of that run of a stream not final raises :class:`StreamRejected`; so does
        one without a run (input the worker read before it knew the stream's run) that came
        after the run's ``open`` in the same input partition, which the run's results say
        (``open_input``); before the run's first result, only if its input was readable.
        A final result read after such a letter is still yielded as final: its
        ``counters["rejected_messages"]`` says how many messages it leaves out (``streamfs
        watch --until-final`` exits 4 for it). ``timeout``: raise ``TimeoutError`` after this
        many seconds (more than 0; None: no limit). ``run``: only results of that run (a
        replaced stream starts run 2, ...); with ``until_final``, once every partition is read
        to its end, a stream whose run ``run`` is not final but has a result of a newer run
        raises :class:`RunReplaced` (its final will not come; or, with no result of ``run``
        read, compaction left only the newer run's). A topic deleted or re-created while being
        read raises :class:`TopicDeleted` (a :class:`TopicMissing`; see
        :meth:`OutputReader.messages`). ``on_caught_up``: called once, when every partition
        has first been read to its end (what was on the topic has been yielded). ``ValueError``
        at once for a parameter out of range, and for ``until_final`` with ``to_end`` (which
        stops at the end, final or not).
        """
        _check_stream(stream)
        _check_timeout(timeout)
        _check_run(run)
        if until_final and to_end:
            raise ValueError("until_final and to_end do not go together: to_end stops at the "
                             "topic's end whether the results are final or not")
        return self._updates(stream, until_final, timeout, to_end, run, on_caught_up)

    def _updates(self, stream: str | None, until_final: bool, timeout: float | None,
                 to_end: bool, run: int | None,
                 on_caught_up: Callable[[], None] | None = None) -> Iterator[dict]:
        finals = _Finals(stream, run, self.refused)
        try:
            for item in self.messages(to_end=to_end, timeout=timeout):
                if item is not None and stream in (None, item[1].get("stream")):
                    result = self._taken(*item, finals, run)
                    if result is not None:
                        yield result
                if on_caught_up is not None and self.caught_up:
                    on_caught_up()
                    on_caught_up = None
                if until_final and self.caught_up:
                    if finals.all_final():
                        return
                    if (letter := finals.rejection()) is not None:
                        raise StreamRejected(letter)
                    # a stream's results share a partition, in order: once a newer run's
                    # result is read, the watched run's final cannot come after it
                    if (replaced := finals.replaced()) is not None:
                        raise RunReplaced(*replaced, topic=self.topic)
        except TimeoutError:
            said = self._timed_out(stream, until_final, timeout)
            if stream is not None and run is None and stream not in finals.newest:
                said += NEW_ONLY_HINT if self._new_only else ID_HINT.format(stream=stream)
            elif stream is None and until_final and (waiting := finals.waiting()):
                # which streams hold it up: one left open (a producer stopped part way) is
                # otherwise found only by scanning the versions printed
                shown = ", ".join(map(repr, waiting[:5]))
                said += f" ({shown}{', ...' if len(waiting) > 5 else ''} not final)"
            raise TimeoutError(said) from None

    def _taken(self, topic: str, message: dict, finals: _Finals, run: int | None) -> dict | None:
        """``message`` if it is a result to yield; dead letters go to ``finals``."""
        kind = message.get("kind")
        if topic != self.topic:
            if kind == "dead_letter":
                finals.dead_letter(message)
            return None
        if kind != "result":
            return None
        if run not in (None, message.get("run", 1)):
            if message.get("run", 1) > run:
                finals.newer_run(message)
            return None
        finals.result(message)
        return message

    def _timed_out(self, stream: str | None, until_final: bool, timeout: float | None) -> str:
        watched = repr(stream) if stream else "every stream"
        if until_final:
            return f"no final result for {watched} on {self.topic} after {timeout} s"
        return f"time is up: watched {watched} on {self.topic} for {timeout} s"

    def current_selections(self, stream: str | None = None, *, run: int | None = None,
                           timeout: float | None = None) -> dict[str, dict]:
        """The latest result of every stream on the topic now (of ``stream`` only, given it);
        ``run``: the latest result of that run (a replaced stream starts run 2, ...), for the
        streams that have one on the topic. ``timeout``: ``TimeoutError`` if the topic is not
        read to its end within this many seconds (None: no limit). ``ValueError`` for a
        ``stream``, ``run`` or ``timeout`` that is not one."""
        latest: dict[str, dict] = {}
        for result in self.updates(stream, to_end=True, run=run, timeout=timeout):
            prev = latest.get(result["stream"])
            if prev is None or result["version"] >= prev["version"]:
                latest[result["stream"]] = result
        return latest


def current_selection(stream: str, kafka_config: dict[str, Any], topic: str, *,
                      run: int | None = None) -> dict | None:
    """The latest result of ``stream`` (of its run ``run``, given it), or ``None`` if it has
    none yet."""
    _check_stream(stream, optional=False)
    _check_run(run)
    with SelectionReader(kafka_config, topic) as reader:
        return reader.current_selections(stream, run=run).get(stream)
