"""The stream lifecycle, independent of Kafka: one raw input message in, one plan out.

``StreamProcessor.handle`` decodes and validates a message, runs the algorithm step and returns a
:class:`Plan`: the result to publish (if the selection changed or the stream closed), the table
records to write in order, and a dead letter for invalid input. The worker
(:mod:`streamfs.worker.app`) commits the plans of a batch, with the input offsets, in one Kafka
transaction; the same plans applied to a dict give the offline API.

Table layout (one table per input topic; every record of a stream lives in the partition of the
stream's key, so the changelog keeps their order):

* ``<stream>␟h``            header: algorithm, params, last applied sequence, version, status,
                            digests of the state entries, ids of the stored columns;
* ``<stream>␟s␟<name>␟<digest>``  one top-level entry of the algorithm's ``to_state()``,
                            content-addressed: a changed entry is a new record (the class vector
                            is written once), so a header always finds the records it names;
                            one larger than a record may be is written in parts, the part
                            ``i >= 1`` under ``...␟<digest>␟<i>`` (the header's digest then
                            ends ``+<parts>``);
* ``<stream>␟c␟<feature>``  one kept feature column (``to_state()["columns"]``);
* ``<stream>␟m␟<start>``, ``<stream>␟n␟<start>``  source column ids and names of a block.

After ``close`` only the header stays (the other records are deleted).

New records are written before the header and stale ones deleted after it, so that even a
store that kept any prefix of a message's writes would have a header naming records that exist
(the worker's transactions make that moot, the offline path and the tests rely on it).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, MutableMapping

import numpy as np
import scipy.sparse as sp

from streamfs.algorithms import registry
from streamfs.algorithms._validation import check_label_types, label_problem
from streamfs.algorithms.opening import (
    check_kind,
    check_open,
    check_stored_column,
    check_stream_id,
    open_advice,
)
from streamfs.algorithms.instance_advice import naming_columns
from streamfs.codec import (FORMATS, CodecError, EnvelopeError, bin_keys_problem, decode,
                            encode_as, packb, run_token_problem, unpackb)
from streamfs.worker.input_checks import (InvalidInput, block_array, block_groups,
                                          check_feature_names, check_finite, check_labels,
                                          check_replace, clipped, continue_from,
                                          misplaced_fields, source_columns, undecodable_field,
                                          unnamed_rule)
from streamfs.worker.naming import FeatureNaming
from streamfs.worker.state_records import (column_key, content_digest, header_key,
                                           header_stream, map_key, names_key, pack_column,
                                           state_keys, unpack_column)
from streamfs.worker.stepping import running, stepping

log = logging.getLogger(__name__)

#: room a record needs beside its key and value within the topic's ``max.message.bytes``
#: (the record batch's header, the record's own lengths and offsets)
RECORD_OVERHEAD = 1024


@functools.cache
def _takes_stored_columns(cls: type) -> bool:
    """Whether ``cls.to_state`` can leave out the ``"columns"`` the store holds already."""
    return "stored_columns" in inspect.signature(cls.to_state).parameters


class _ConsumedInvalid(InvalidInput):
    """Invalid data of an open stream: rejected, but its sequence number is consumed. The
    bumped header is to be written unless the stream's checkpoint is deferred (then it is in
    memory and goes out with the checkpoint)."""

    def __init__(self, reason: str, header: dict | None) -> None:
        super().__init__(reason)
        self.header = header


class _Unreadable(InvalidInput):
    """A message that cannot be read (too large, undecodable): if its key names an open stream,
    that stream lost it."""


class _StateIncomplete(_Unreadable):
    """An open stream whose header names state records the store lacks: the stream is lost as
    if a message were (every later message is refused with this reason)."""


class StateLost(Exception):
    """A step failed part-way through the algorithm of a stream whose state is newer in memory
    than in the store (checkpoint deferred): its state cannot be trusted and the unpersisted
    steps cannot be redone here. The caller must discard everything since the last checkpoint
    and replay it with ``defer=False``, which makes the failing message an ordinary dead
    letter."""


@dataclass
class Plan:
    """What the agent must do for one input message, in this order."""

    result: bytes | None = None  # publish to selected-features and await the ack
    writes: list[tuple[str, bytes | None]] = field(default_factory=list)  # None deletes
    dead_letter: bytes | None = None
    reason: str | None = None  # the dead letter's
    skipped: bool = False  # an already applied sequence number (redelivery)
    stream: str | None = None
    step_seconds: float = 0.0
    algorithm: str | None = None
    n_items: int = 0  # features or instances applied
    selection_size: int | None = None
    final: bool = False
    rebuild_seconds: float | None = None  # set when the algorithm was rebuilt from the store


def _iso(timestamp: float) -> str:
    """A timestamp (seconds since the epoch) as UTC ISO 8601."""
    from datetime import datetime, timezone

    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat(timespec="seconds")


def _standing(header: dict) -> str:
    """Where an existing stream stands, for a dead letter: status, when, run and version."""
    status = header["status"]
    when = header.get("closed_at") if status == "closed" else header.get("opened_at")
    if header.get("expired_after") is not None:
        status = "dropped after its input stopped"
    at = f" at {_iso(when)}" if when is not None else ""
    return f"{status}{at}, run {header.get('run', 1)}, version {header['version']}"


def _expired_reason(stream: str, header: dict) -> str:
    """Why an open stream was dropped by STREAMFS_OPEN_IDLE_TIMEOUT, for its dead letters."""
    return (f"stream {stream!r} (run {header.get('run', 1)}) was dropped by the worker at "
            f"{_iso(header['closed_at'])}: no input for {header['expired_after']:.0f} s, past "
            f"its STREAMFS_OPEN_IDLE_TIMEOUT; its columns and algorithm state are "
            f"deleted and it will have no final result. Publish it again with --replace "
            f"(replace=True)")


def _lost_reason(stream: str, lost: dict) -> str:
    """Why a stream that lost an unreadable message (or records of its state) refuses the
    messages after it."""
    if lost.get("state"):
        return lost["reason"]
    where = (f"{lost['topic']}[{lost['partition']}]@{lost['offset']}: "
             if lost.get("topic") is not None else "")
    return (f"stream {stream!r} lost a message the worker could not read ({where}"
            f"{lost['reason']}) and cannot go on without it: publish the stream again "
            f"(streamfs produce --replace, or an 'open' with replace=true)")


def _replaced_at(header: dict, run: str) -> int | None:
    """The last seq applied of ``run``, a replaced run of the stream of ``header`` (its latest
    such run where the token repeats); None where the header does not know it."""
    seqs = header.get("past_seqs") or []
    runs = header.get("past_runs", [])
    if len(seqs) != len(runs):
        return None
    return seqs[len(runs) - 1 - runs[::-1].index(run)]


def _input_position(origin: dict | None) -> dict | None:
    """Where an input message was read (``topic``, ``partition``, ``offset``); None unless all
    three are known (a processor driven without them, as in tests)."""
    position = {k: (origin or {}).get(k) for k in ("topic", "partition", "offset")}
    return position if None not in position.values() else None


#: the replaced runs whose tokens a stream's header keeps (see :meth:`StreamProcessor._open`)
PAST_RUNS_KEPT = 16

#: the header bytes allowed per block that carries columns or names (two lists of starts,
#: msgpack integers up to 9 bytes): 262,000 such blocks with the default 8 MiB records
BLOCK_LIST_BYTES = 32

#: the memory a feature block's step takes per column, measured (SAOLA, a CSR block of empty
#: columns: 2 million took 128 MB, 200 million 11.9 GB)
COLUMN_STEP_BYTES = 64


def _as_format(X: Any, fmt: str) -> Any:
    """A sparse ``X`` in the format ``fmt`` the algorithm reads; the decoded matrix itself
    where it is one already, so that what the decoder learnt of it (its canonical flag)
    stays with it."""
    if not sp.issparse(X) or (X.format == fmt and isinstance(X, sp.spmatrix)):
        return X
    return sp.csc_matrix(X) if fmt == "csc" else sp.csr_matrix(X)


class StreamProcessor:
    """Applies input messages of one stream kind (``"features"`` or ``"instances"``)."""

    def __init__(self, kind: str, store: MutableMapping[str, bytes], *,
                 max_message_bytes: int = 8 * 1024 * 1024,
                 max_buffer_bytes: int = 1 << 30,
                 output_format: str = "msgpack", log_dead_letters: bool = True,
                 output_bytes: int | None = None) -> None:
        if kind not in ("features", "instances"):
            raise ValueError(f"kind must be 'features' or 'instances', got {kind!r}")
        self.kind = kind
        self.store = store
        #: whether the deployment's other kind of stream holds a stream id (set by the worker
        #: where it holds the co-numbered partition of the other input topic, as the range
        #: assignor gives it): an 'open' of a new stream under such an id is refused, as the
        #: two would publish their results under one key. None: not known
        self.other_kind_has: Callable[[str], bool] | None = None
        self.max_message_bytes = max_message_bytes
        # the largest record the results and dead-letter topics take (their max.message.bytes),
        # if below the worker's own limit
        self.output_bytes = min(max_message_bytes, output_bytes or max_message_bytes)
        self.max_buffer_bytes = max_buffer_bytes  # the most an open's params may ask for
        if output_format not in FORMATS:
            raise ValueError(f"output_format must be one of {FORMATS}, got {output_format!r}")
        self.output_format = output_format
        # off where the caller reports the reason itself (the offline run raises it): the
        # same line twice otherwise
        self.log_dead_letters = log_dead_letters
        # stream -> (header, algorithm object) as of the header's last_seq
        self._cache: dict[str, tuple[dict, Any]] = {}
        self._naming = FeatureNaming(store, self._state_entry)
        # stream -> its header, for streams stepped since their last checkpoint: the algorithm
        # object in the cache is then newer than the state records in the store
        self._dirty: dict[str, dict] = {}
        self._mutating = False  # the current step has entered the algorithm

    # ----------------------------------------------------------------- entry point
    def handle(self, key: bytes | str | None, raw: bytes, *, timestamp: float | None = None,
               origin: dict | None = None, defer: bool = False) -> Plan:
        """Process one raw message; never raises for bad input (it becomes a dead letter).

        With ``defer=False`` the plan's writes bring the store up to date with this message.
        With ``defer=True`` a step's algorithm state stays in memory: :meth:`flush` returns
        the records of every stream stepped since (the worker calls it once per batch, so a
        stream's state is serialised once per transaction, not once per message). Raises
        :class:`StateLost` only with ``defer=True``.
        """
        origin = origin or {}
        stream, bad_key = key, None
        if isinstance(key, bytes):
            try:
                stream = key.decode("utf-8")
            except UnicodeDecodeError:  # decoded with replacement, b"s\xff" and b"s\xfe"
                stream, bad_key = None, key  # were one stream "s\ufffd" of two keys
        self._run_of_message = None
        self._refused_run = False
        self._key_bytes = key if isinstance(key, bytes) else (key or "").encode("utf-8")
        try:
            if raw is None or len(raw) == 0:
                raise InvalidInput("empty message (tombstone or zero bytes) on an input topic")
            if len(raw) > self.max_message_bytes:
                raise _Unreadable(
                    f"message of {len(raw)} bytes exceeds the worker limit of "
                    f"{self.max_message_bytes} bytes (STREAMFS_MAX_MESSAGE_BYTES)"
                )
            try:
                # arrays as read-only views of ``raw`` where they lie aligned: a block's
                # values are not copied (the selectors never write into their input)
                message = decode(raw, writeable=False, lenient=True)
            except EnvelopeError as exc:
                self._refuse_other_run(stream, exc)
                raise _Unreadable(str(exc)) from None
            except CodecError as exc:
                raise _Unreadable(str(exc)) from None
            key_stream = stream
            if stream is None and isinstance(message.get("stream"), str):
                stream = message["stream"]  # a keyless record's dead letter names its stream
            if bad_key is not None:
                raise InvalidInput(f"record key {bad_key!r} is not UTF-8 text: a stream's "
                                   f"messages are keyed by its stream id in UTF-8")
            stream = self._check_stream_id(key_stream, message)
            with stepping(stream):  # an algorithm's warning names the stream (and algorithm)
                plan = self._apply(stream, message, timestamp, raw, origin)
                if not defer and stream in self._dirty:
                    plan.writes.extend(self._checkpoint(stream))
            return plan
        except _ConsumedInvalid as exc:
            plan = self._reject(stream, raw, str(exc), origin)
            if exc.header is not None:
                plan.writes.append((header_key(stream), packb(exc.header)))
            elif not defer:
                plan.writes.extend(self._checkpoint(stream))
            return plan
        except _Unreadable as exc:
            header = self._note_lost(stream, str(exc), origin,
                                     state=isinstance(exc, _StateIncomplete))
            plan = self._reject(stream, raw, str(exc), origin)
            if header is not None:
                plan.writes.append((header_key(stream), packb(header)))
            elif not defer and stream in self._dirty:
                plan.writes.extend(self._checkpoint(stream))
            return plan
        except InvalidInput as exc:
            return self._reject(stream, raw, str(exc), origin)
        except StateLost:
            raise
        except Exception as exc:  # noqa: BLE001 - a bug must not stop every other stream
            if stream in self._dirty:
                raise StateLost(stream) from exc
            log.exception("internal error on stream %r", stream)
            self._cache.pop(stream, None)  # state in the store is untouched
            return self._reject(stream, raw, f"internal error: {type(exc).__name__}: {exc}", origin)

    def _stored_header(self, stream: str) -> dict | None:
        """The stream's header: in memory until its checkpoint, else in the store."""
        header = self._dirty.get(stream)
        if header is None:
            raw_header = self.store.get(header_key(stream))
            header = unpackb(raw_header) if raw_header is not None else None
        return header

    def _refuse_other_run(self, stream: str | None, exc: EnvelopeError) -> None:
        """Raises :class:`InvalidInput` if the unreadable envelope (another wire version, a
        kind unknown here) names another run than the stream's: not this run's message, so
        not its loss."""
        run = exc.message.get("run")
        header = self._stored_header(stream) if stream is not None else None
        if header is None or run is None or run == header.get("run_token"):
            return
        self._run_of_message, self._refused_run = None, True
        raise InvalidInput(f"{exc}, and it belongs to run {run!r}, but stream {stream!r} is at "
                           f"run {header.get('run_token')!r}: refused as another run's message")

    def _note_lost(self, stream: str | None, reason: str, origin: dict,
                   state: bool = False) -> dict | None:
        """Note in the header of the open stream keyed ``stream`` (if any) that it lost an
        unreadable message (``state``: records of its state), so that its later messages say so rather than report a sequence
        gap. Returns the header to write, None if there is none or it waits in memory for the
        stream's checkpoint."""
        header = self._stored_header(stream) if stream is not None else None
        if header is None or header["status"] != "open" or header.get("lost"):
            return None
        self._run_of_message = header.get("run", 1)
        header = dict(header, lost={**origin, "reason": reason, **({"state": True} if state
                                                                    else {})})
        if stream in self._cache:
            self._cache[stream] = (header, self._cache[stream][1])
        if stream in self._dirty:
            self._dirty[stream] = header
            return None
        return header

    def flush(self) -> list[tuple[str, bytes | None]]:
        """The records that checkpoint every stream stepped with ``defer=True`` since the last
        flush (state entries, kept columns, header; stale records deleted)."""
        writes: list[tuple[str, bytes | None]] = []
        for stream in list(self._dirty):
            writes.extend(self._checkpoint(stream))
        return writes

    def _checkpoint(self, stream: str) -> list[tuple[str, bytes | None]]:
        header, algo = self._cache[stream]
        del self._dirty[stream]
        if not hasattr(algo, "selected_"):
            state = {}
        elif _takes_stored_columns(type(algo)):  # copies only the columns not stored yet
            state = algo.to_state(stored_columns=set(header["columns"]))
        else:
            state = algo.to_state()
        writes: list[tuple[str, bytes | None]] = []
        self._persist(stream, header, algo_state=state, extra={}, writes=writes)
        return writes

    # ----------------------------------------------------------------- lifecycle
    def _check_stream_id(self, key: str | None, message: dict) -> str:
        body = message.get("stream")
        if body is None and b"stream" in message:
            raise InvalidInput(bin_keys_problem(message))
        if body is None or body == "":
            raise InvalidInput("message has no 'stream' id")
        try:
            check_stream_id(body)
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        if key is None:
            raise InvalidInput(
                f"record has no key: every message of stream {body!r} must be keyed by its "
                f"stream id (otherwise its messages can land on different partitions)")
        if key != body:
            raise InvalidInput(f"record key {key!r} differs from the stream id {body!r}")
        return body

    def _apply(self, stream: str, message: dict, timestamp: float | None, raw: bytes,
               origin: dict) -> Plan:
        kind = message["kind"]
        # an open's or a close's bytes: to tell its redelivery from another message at its seq
        digest = content_digest(raw) if kind in ("open", "close") else None
        seq = message.get("seq")
        if seq is None and b"seq" in message:  # its seq unknown: refused, not consumed
            raise InvalidInput(bin_keys_problem(message))
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
            raise InvalidInput(f"'seq' must be a non-negative integer, got {seq!r}")
        header = self._stored_header(stream)
        # the run a dead letter belongs to (or would have started), for `streamfs watch`
        self._run_of_message = header.get("run", 1) if header is not None else 1
        running(message.get("algorithm") if kind == "open" or header is None
                else header["algorithm"])

        run = message.get("run")
        problem = run_token_problem(run)
        if problem:
            raise InvalidInput(problem)
        if header is not None:
            verdict = self._match_run(stream, header, kind, seq, run, message, digest)
            if verdict == "skip":
                return Plan(skipped=True, stream=stream)  # redelivered: already applied
            if verdict == "replace":
                return self._open(stream, message, digest, timestamp, origin,
                                  previous=header)
        if kind == "open" and header is None:
            if seq != 0:
                raise InvalidInput(f"'open' must carry seq 0, got {seq}")
            return self._open(stream, message, digest, timestamp, origin)
        if header is None:
            if kind not in ("close", self.kind):  # the other topic's data, or an output kind
                raise InvalidInput(f"{kind!r} message on the {self.kind} topic (stream "
                                   f"{stream!r} has no 'open' here)")
            raise InvalidInput(f"{kind!r} for unknown stream {stream!r} (data before 'open', "
                               f"or after an 'open' that was refused)")
        if header["status"] == "closed":
            if header.get("expired_after") is not None:
                raise InvalidInput(_expired_reason(stream, header) + f"; {kind!r} (seq {seq}) "
                                   f"is refused")
            raise InvalidInput(f"{kind!r} after 'close' of stream {stream!r} (seq {seq})")
        if header.get("lost"):  # stuck: a message is missing for good
            raise InvalidInput(_lost_reason(stream, header["lost"]))
        if seq <= header["last_seq"]:  # a misnumbered close (see _match_run): not consumed
            refused = header.get("refused_close") or [None]
            taken = ("the 'open'" if seq == 0 else "a refused 'close'" if seq == refused[0]
                     else "a block")
            raise InvalidInput(
                f"'close' with seq {seq}, but seq {seq} was already taken ({taken}): a 'close' "
                f"takes the next seq, {header['last_seq'] + 1}; the stream stays open")
        if seq != header["last_seq"] + 1:
            # Not applied: later messages of this stream will be refused the same way, so the
            # producer's gap is visible in the dead-letter topic rather than silently merged.
            raise InvalidInput(
                f"sequence gap in stream {stream!r}: expected {header['last_seq'] + 1}, got {seq}"
            )
        t0 = time.perf_counter()
        rebuilt = self._cache.get(stream, ({"last_seq": None},))[0]["last_seq"] != header["last_seq"]
        algo = self._algorithm(stream, header)
        rebuild_seconds = time.perf_counter() - t0 if rebuilt else None
        self._mutating = False
        try:
            if kind == "open":  # of its own run, at its next seq: refused as a block is
                raise InvalidInput(f"stream {stream!r} is already open: an 'open' starts a "
                                   f"run, at seq 0; refused, its seq {seq} consumed, and the "
                                   f"stream goes on")
            if kind not in ("close", self.kind):
                raise InvalidInput(f"{kind!r} message on the {self.kind} topic")
            undecodable = undecodable_field(message)
            if undecodable:  # as any invalid block: consumed, the stream goes on
                raise InvalidInput(f"{undecodable}: the block is refused, its seq {seq} "
                                   f"consumed, and the stream goes on")
            misplaced = misplaced_fields(self.kind, message) if kind == "close" else None
            if misplaced:  # consumed like other refused data: the stream goes on
                raise InvalidInput(
                    f"{misplaced}: refused, its seq {seq} consumed and the stream still open; "
                    f"send the data in a block with seq {seq + 1} and a 'close' after it, or a "
                    f"'close' with seq {seq + 1} and nothing else")
            plan = self._step(stream, header, algo, message, timestamp, close=kind == "close")
            plan.rebuild_seconds = rebuild_seconds
            return plan
        except StateLost:
            raise
        except Exception as exc:  # noqa: BLE001 - a bug must not stop the stream either
            if not isinstance(exc, InvalidInput):
                # A bug (or a resource error) on this message: dead-lettered with its cause,
                # and the stream goes on without it as without invalid data. Left unconsumed,
                # its sequence number made every later message of the stream a "sequence gap"
                # dead letter: the rest of its valid input lost.
                log.exception("internal error on stream %r", stream)
                exc = InvalidInput(f"internal error: {type(exc).__name__}: {exc}")
            # Consume the sequence number so that the stream can go on.
            header = dict(header, last_seq=seq, rejected=header["rejected"] + 1,
                          input_at=timestamp)
            if kind == "close":  # its redelivery is skipped, another close at its seq refused
                header["refused_close"] = [seq, digest]
            if self._mutating:
                # The algorithm may be half-mutated: rebuild it from the store next time,
                # which is only right if the store holds every earlier step.
                if stream in self._dirty:
                    raise StateLost(stream) from None
                self._cache.pop(stream, None)
            else:  # refused before the algorithm was touched: the cached object still holds
                self._cache[stream] = (header, algo)
            if stream in self._dirty:
                self._dirty[stream] = header
                raise _ConsumedInvalid(str(exc), None) from None
            raise _ConsumedInvalid(str(exc), header) from None

    def _match_run(self, stream: str, header: dict, kind: str, seq: int, run: str | None,
                   message: dict, digest: str | None) -> str:
        """``"skip"`` (a redelivery), ``"replace"`` (an ``open`` with ``replace`` starting a new
        run) or ``"apply"``; raises :class:`InvalidInput` for a message of another run.

        Producers stamp every message of one run of a stream with the same random ``run``
        token, which tells a redelivered message from a new run re-using the stream id.
        Messages without a token (other producers) fall back to sequence numbers alone, but
        for an ``open`` (see :meth:`_tokenless_open`).
        """
        current = header.get("run_token")
        if run is None and current is None and kind == "open":
            return self._tokenless_open(stream, header, message, digest)
        if run != current:
            if run is not None and run in header.get("past_runs", []):
                ended = _replaced_at(header, run)
                if ended is None or seq <= ended:
                    return "skip"  # a redelivery from a run that has since been replaced
                # its producer went on after another's replace ended its run: skipped as a
                # redelivery, its messages were lost without a word
                self._run_of_message, self._refused_run = None, True
                raise InvalidInput(
                    f"{kind!r} (seq {seq}) belongs to run {run!r} of stream {stream!r}, which "
                    f"a replace ended after its seq {ended} (the stream is at run "
                    f"{header.get('run', 1)}): publish it again (streamfs produce --replace) "
                    f"as a run of its own")
            if kind == "open" and message.get("replace") is True:
                self._run_of_message = header.get("run", 1) + 1  # should _open refuse it
                return "replace"
            # A message of a run the stream never accepted: its dead letter belongs to no run
            # (neither the current one nor a later run that a --replace may start).
            self._run_of_message, self._refused_run = None, True
            if kind == "open":
                check_replace(message)
                raise InvalidInput(
                    f"stream {stream!r} already exists ({_standing(header)}): use a new stream "
                    f"id, or send 'open' with replace=true (streamfs produce --replace) to start "
                    f"a new run")
            closed = " (the stream is closed)" if header["status"] == "closed" else ""
            why = closed or " (was its 'open' rejected?)"
            if run is None:
                raise InvalidInput(
                    f"{kind!r} (seq {seq}) carries no run token, but stream {stream!r} was "
                    f"opened with run {current!r}{closed}: every message of a run carries the "
                    f"token of its 'open'")
            raise InvalidInput(
                f"{kind!r} (seq {seq}) belongs to run {run!r}, but stream {stream!r} is at run "
                f"{current!r}{why}")
        if seq <= header["last_seq"]:
            # No close was applied at or below the last seq of an open stream: a close there
            # is misnumbered (refused in _apply), not redelivered, unless it is a refused
            # close's redelivery or may be the close of an earlier run without a token.
            if (kind == "close" and header["status"] == "open"
                    and header.get("refused_close") != [seq, digest]
                    and not (run is None and None in header.get("past_runs", []))):
                return "apply"
            return "skip"
        return "apply"  # an open here is refused by _apply, its seq consumed

    def _tokenless_open(self, stream: str, header: dict, message: dict, digest: str) -> str:
        """``"skip"``, ``"replace"`` or :class:`InvalidInput` for an ``open`` without a run token
        on a stream whose ``open`` had none: only the stream's own ``open``, byte for byte, is a
        redelivery; another one re-uses the id, which ``replace`` allows."""
        if digest == header.get("open_digest", digest):  # headers of older workers: no digest
            return "skip"
        if message.get("replace") is True:
            self._run_of_message = header.get("run", 1) + 1  # should _open refuse it
            return "replace"
        self._run_of_message, self._refused_run = None, True
        check_replace(message)
        raise InvalidInput(
            f"stream {stream!r} already exists ({_standing(header)}) and this 'open' differs "
            f"from its own: a re-used stream id. Without a 'run' token an 'open' is taken as a "
            f"redelivery only if it is byte-identical; stamp every message of a run with the "
            f"same 'run' token (streamfs produce does), or send replace=true to start a new run")

    def _open(self, stream: str, message: dict, digest: str, timestamp: float | None = None,
              origin: dict | None = None, previous: dict | None = None) -> Plan:
        after = continue_from(message)
        if previous is None and after is not None:  # else the header knows better
            self._run_of_message = after[0] + 1
        name = message.get("algorithm")
        misplaced = misplaced_fields(self.kind, message)
        if misplaced:
            raise InvalidInput(f"{misplaced}: send the 'open' without it")
        undecodable = undecodable_field(message)
        if undecodable:
            raise InvalidInput(f"{undecodable}: the 'open' is refused; send it again with the "
                               f"field fixed")
        check_replace(message)  # on a new id too, where a true one changes nothing
        try:
            check_kind(self.kind, name)  # before what the other kind's 'open' lacks
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        if previous is None and self.other_kind_has is not None and self.other_kind_has(stream):
            other = "an instance stream" if self.kind == "features" else "a feature stream"
            # of no run: a watcher of the stream that holds the id must not take it for its own
            self._run_of_message, self._refused_run = None, True
            raise InvalidInput(
                f"stream id {stream!r} is {other}'s on this deployment (open, or closed and "
                f"kept): the two would publish their results under one key of the results "
                f"topic, mixed; use another stream id")
        y = None
        if self.kind == "features":
            if "y" not in message:
                raise InvalidInput("'open' of a feature stream must carry the class vector 'y'")
            y = check_labels(message["y"], "class vector 'y'")
        else:
            d = message.get("n_features")
            if not isinstance(d, int) or isinstance(d, bool) or d < 1:
                raise InvalidInput(f"'open' of an instance stream needs n_features >= 1, got {d!r}")
        try:
            # A replay after a crash must draw the same numbers: seed from the stream id.
            seed = int.from_bytes(hashlib.blake2b(stream.encode(), digest_size=4).digest(),
                                  "little")
            _, algo, params = check_open(self.kind, name, message.get("params"), y=y, seed=seed,
                                         n_features=message.get("n_features"),
                                         buffer_cap=self.max_buffer_bytes)
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        entries: dict[str, Any] = {"__names__": unnamed_rule(message)}
        if y is not None:
            try:
                check_stored_column(y.shape[0], self.max_message_bytes)
            except ValueError as exc:
                raise InvalidInput(str(exc)) from None
            # the codec carries numeric arrays only: string labels travel as a list
            entries["__y__"] = y.tolist() if y.dtype.kind in "USO" else y
        else:
            entries["__n_features__"] = d
            names = message.get("feature_names")
            if names is not None:
                entries["__names__"]["names"] = check_feature_names(names, d, "'feature_names'")
        header = {
            "algorithm": name, "params": params, "kind": self.kind, "last_seq": 0,
            "version": 0, "status": "open", "states": {}, "columns": [],
            "selection": None, "rejected": 0, "n_items": 0, "maps": [], "name_blocks": [],
            "run": 1, "run_token": message.get("run"), "past_runs": [], "open_digest": digest,
            "opened_at": timestamp, "closed_at": None, "open_input": _input_position(origin),
            # the input record's timestamp, the producer's silence (STREAMFS_OPEN_IDLE_TIMEOUT)
            # counts from it; a replay gives the same one, so the same store
            "input_at": timestamp,
        }
        plan = Plan(stream=stream, algorithm=name)
        if previous is None and after is not None:
            # no header (dropped after its retention): go on after the producer's last result
            header.update(run=after[0] + 1, version=after[1])
        if previous is not None:  # replace: a new run under the same id, versions go on
            # the latest replaced runs' tokens, to skip their redeliveries; bounded, as the
            # header is one record (an older run's message is refused as another run's)
            past = previous.get("past_runs", []) + [previous.get("run_token")]
            # and the last seq each applied: a later one is not a redelivery (headers of older
            # workers have none: None, every message of the run skipped as before)
            ended = (previous.get("past_seqs") or [None] * len(past[:-1])) + [previous["last_seq"]]
            header.update(run=previous.get("run", 1) + 1, version=previous["version"],
                          past_runs=past[-PAST_RUNS_KEPT:], past_seqs=ended[-PAST_RUNS_KEPT:])
        self._persist(stream, header, algo_state={}, extra=entries, writes=plan.writes)
        if previous is not None:
            written = {k for k, _ in plan.writes}
            plan.writes.extend((k, None) for k in self._record_keys(stream, previous)
                               if k not in written)
            self.forget(stream)
            log.info("stream %r replaced: run %d starts", stream, header["run"])
        self._cache[stream] = (header, algo)
        return plan

    def expire_idle(self, timeout: float, *, now: float, since: float
                    ) -> tuple[list[tuple[str, bytes | None]], list[Plan]]:
        """The records and dead letters that drop every open stream whose last input record's
        timestamp is ``timeout`` seconds or more before ``now`` (STREAMFS_OPEN_IDLE_TIMEOUT): its
        columns and algorithm state deleted, its header closed with ``expired_after`` (late
        messages are refused with the reason, a replace starts a new run, the closed
        retention drops it in time), and a dead letter of its run, which fails a reader
        waiting for its final result. Changes nothing here: the caller commits them, then
        has the streams forgotten (:meth:`forget`). ``since``: what a header without
        ``input_at`` (written before it existed, or input without a timestamp) counts from:
        the worker's start."""
        writes: list[tuple[str, bytes | None]] = []
        letters: list[Plan] = []
        for key, value in self.store.items():  # (not changed here)
            stream = header_stream(key)
            if stream is None or stream in self._dirty:  # stepped since its checkpoint
                continue
            header = unpackb(value)
            last = header.get("input_at")
            last = since if last is None else last
            if header.get("status") != "open" or now - last < timeout:
                continue
            old_keys = self._record_keys(stream, header)
            header.update(status="closed", closed_at=now, expired_after=round(now - last, 3),
                          states={}, columns=[], maps=[], name_blocks=[])
            writes.append((key, packb(header)))
            writes.extend((k, None) for k in old_keys)
            self._run_of_message, self._refused_run = header.get("run", 1), False
            letters.append(self._reject(stream, None, _expired_reason(stream, header), {}))
        return writes, letters

    def forget(self, stream: str) -> None:
        """Drop what is cached in memory for ``stream`` (closed, replaced or dropped)."""
        for cache in (self._cache, self._dirty):
            cache.pop(stream, None)
        self._naming.forget(stream)

    @staticmethod
    def _record_keys(stream: str, header: dict) -> list[str]:
        """Every table key a header names (state entries, columns, block maps and names)."""
        return ([k for n, d in header["states"].items() for k in state_keys(stream, n, d)]
                + [column_key(stream, f) for f in header["columns"]]
                + [map_key(stream, m) for m in header.get("maps", [])]
                + [names_key(stream, m) for m in header.get("name_blocks", [])])

    def _algorithm(self, stream: str, header: dict) -> Any:
        cached = self._cache.get(stream)
        if cached is not None and cached[0]["last_seq"] == header["last_seq"]:
            return cached[1]
        # a rebuild (after a restart or a rebalance): the header must not outlive the records
        # it names (the changelog lost them, deleted and made again under the worker): each
        # later message was an "internal error: KeyError" and a sequence gap (a missing class
        # vector or name block came up only in the step)
        missing = next((k for k in self._record_keys(stream, header) if k not in self.store),
                       None)
        if missing is not None:
            raise _StateIncomplete(
                f"stream {stream!r} cannot go on: its state in the changelog is incomplete "
                f"(the record {clipped(missing, 120)!r} is missing: the changelog topic lost "
                f"records, deleted and made again, say); publish the stream again (streamfs "
                f"produce --replace, or an 'open' with replace=true)")
        spec = registry.get(header["algorithm"])
        if not header["states"].keys() - {"__y__", "__n_features__", "__names__"}:
            algo = spec.build(header["params"])  # nothing learned yet
        else:
            state = {
                name: self._state_entry(stream, name, digest)
                for name, digest in header["states"].items() if not name.startswith("__")
            }
            state["columns"] = {
                f: unpack_column(self.store[column_key(stream, f)]) for f in header["columns"]
            }
            algo = spec.load().from_state(state)
        self._cache[stream] = (header, algo)
        return algo

    def _extra(self, stream: str, header: dict, name: str) -> Any:
        return self._state_entry(stream, name, header["states"][name])

    def _state_entry(self, stream: str, name: str, ref: str) -> Any:
        keys = state_keys(stream, name, ref)
        if len(keys) == 1:
            return unpackb(self.store[keys[0]])
        return unpackb(b"".join(self.store[k] for k in keys))

    def _step(self, stream: str, header: dict, algo: Any, message: dict,
              timestamp: float | None, close: bool) -> Plan:
        t0 = time.perf_counter()
        n_items = 0
        header = dict(header)
        self._pending_maps: list[tuple[str, bytes]] = []
        if close:
            # hasattr: False until the first data block (a property for some: computed once)
            if hasattr(algo, "finish") and hasattr(algo, "selected_"):
                self._mutating = True
                algo.finish()
        elif self.kind == "features":
            n_items = self._feature_block(stream, header, algo, message)
        else:
            n_items = self._instance_block(stream, header, algo, message)
        elapsed = time.perf_counter() - t0

        fitted = hasattr(algo, "selected_")
        selection = algo.selection() if fitted else []
        selection = self._naming.name_selection(stream, header, selection)
        packed_selection = packb(selection)
        sel_digest = content_digest(packed_selection)
        # the selection's size too: /metrics shows it again after a restart or rebalance
        header = dict(header, last_seq=message["seq"], n_items=header["n_items"] + n_items,
                      selection_size=len(selection), input_at=timestamp)
        plan = Plan(stream=stream, step_seconds=elapsed, algorithm=header["algorithm"],
                    n_items=n_items, selection_size=len(selection))
        if close or sel_digest != header["selection"]:
            header["version"] += 1
            header["selection"] = sel_digest
            plan.result = encode_as({
                "kind": "result", "stream": stream, "algorithm": header["algorithm"],
                "params": header["params"], "run": header.get("run", 1),
                "version": header["version"],
                "seq": message["seq"], "final": close, "selection": selection,
                "counters": self._counters(algo, header, fitted),
                "input_timestamp": timestamp, "open_input": header.get("open_input"),
            }, self.output_format, packed={"selection": packed_selection})
            plan.final = close
            budget = self.value_budget(stream.encode())
            if len(plan.result) > budget:
                # unpublishable: the transaction failed on it again at every replay, and the
                # worker made no more progress. Refused as invalid data is; the algorithm is
                # rebuilt from its last checkpoint, without this message.
                raise InvalidInput(
                    f"the result of this message would be {len(plan.result)} bytes "
                    f"({len(selection)} selected features), over the {budget} bytes a result "
                    f"of stream {stream!r} may take (STREAMFS_MAX_MESSAGE_BYTES, the topics' "
                    f"max.message.bytes): refused, the stream goes on without it; select fewer "
                    f"features, or raise both limits")
        if close:
            # Bounded state: a closed stream keeps its small header only (enough to skip
            # redeliveries and refuse late or re-used messages); columns, algorithm state, block
            # maps and names are deleted (tombstones on the compacted changelog).
            old_keys = self._record_keys(stream, header)
            # the retention (STREAMFS_CLOSED_RETENTION) counts from the worker's clock: the
            # record's timestamp is the producer's, and a replay of history sends old ones
            header.update(status="closed", closed_at=time.time(), states={}, columns=[],
                          maps=[], name_blocks=[])
            plan.writes.append((header_key(stream), packb(header)))
            plan.writes.extend((k, None) for k in old_keys)
            self.forget(stream)
            return plan
        plan.writes.extend(self._pending_maps)  # immutable, before the header that names them
        self._cache[stream] = (header, algo)
        self._dirty[stream] = header  # state, columns and header: at the checkpoint
        return plan

    def _feature_block(self, stream: str, header: dict, algo: Any, message: dict) -> int:
        X = block_array(message.get("X"), "features")
        y = np.asarray(self._extra(stream, header, "__y__"))
        if X.shape[0] != y.shape[0]:
            raise InvalidInput(
                f"feature block has columns of length {X.shape[0]}, the stream's class vector "
                f"has N = {y.shape[0]}"
            )
        # a few bytes of a sparse block can declare millions of empty columns, each costing
        # the step about COLUMN_STEP_BYTES (200 million: 12 GB and 30 s, a worker killed
        # for memory on every replay): bounded as the algorithms' buffers are
        most = self.max_buffer_bytes // COLUMN_STEP_BYTES
        if X.shape[1] > most:
            raise InvalidInput(
                f"feature block has {X.shape[1]} columns: processing takes about "
                f"{COLUMN_STEP_BYTES} bytes a column, so a block may have at most {most} "
                f"(max_buffer_bytes = {self.max_buffer_bytes}, STREAMFS_MAX_BUFFER_BYTES); send "
                f"the columns in several blocks")
        if X.dtype.kind == "b":
            X = X.astype(np.uint8)
        # NaN, infinite and too large values: every feature-stream algorithm checks its block
        # first, before it changes any state, and names the columns; checking here too was a
        # second pass over every value, with a temporary array as large as the block
        kwargs = block_groups(message.get("groups"), header["algorithm"], X.shape[1])
        columns = source_columns(message.get("columns"), X.shape[1])
        names = message.get("names")
        if names is not None:
            names = check_feature_names(names, X.shape[1], "'names' of a feature block")
        if X.shape[1] == 0:
            # nothing to learn, map or name: recording its empty 'columns' or 'names' would
            # spend one of the stream's block-list entries (BLOCK_LIST_BYTES) on nothing, and
            # a producer that flushes on a timer would run out of them
            return 0
        # the header lists the blocks that carried columns or names, and is one record: a
        # stream of a column a block would have outgrown it, failing every transaction
        most = self.value_budget(stream.encode()) // BLOCK_LIST_BYTES
        for carried, listed in (("columns", "maps"), ("names", "name_blocks")):
            if message.get(carried) is not None and len(header.get(listed, [])) >= most:
                raise InvalidInput(
                    f"stream {stream!r} has had {most} blocks with {carried!r}, as many as its "
                    f"state lists in one record: send more columns per block (a feature stream "
                    f"sends them in blocks of up to the message limit, not one by one)")
        # the stream's class vector goes with its first block only: the algorithm keeps it,
        # and comparing it again on every block cost 6 % of a dense SAOLA run
        first = not getattr(algo, "n_features_seen_", 0)
        self._mutating = True
        try:
            algo.partial_fit(_as_format(X, "csc"), y if first else None, **kwargs)
        except ValueError as exc:
            raise InvalidInput(f"rejected by {header['algorithm']}: {exc}") from None
        if columns is not None:
            start = int(algo.n_features_seen_) - X.shape[1]
            header["maps"] = header.get("maps", []) + [start]
            self._pending_maps.append((map_key(stream, start), packb(columns)))
            self._naming.add_columns(stream, start, columns)
        if names is not None:
            start = int(algo.n_features_seen_) - X.shape[1]
            header["name_blocks"] = header.get("name_blocks", []) + [start]
            self._pending_maps.append((names_key(stream, start), packb(names)))
            self._naming.add_names(stream, header, start, names)
        return X.shape[1]

    def _instance_block(self, stream: str, header: dict, algo: Any, message: dict) -> int:
        X, y = block_array(message.get("X"), "instances"), message.get("y")
        d = self._extra(stream, header, "__n_features__")
        if X.shape[1] != d:
            raise InvalidInput(f"instance block has {X.shape[1]} features, the stream has d = {d}")
        if X.shape[0] == 0 and (y == [] if isinstance(y, list)
                                else isinstance(y, np.ndarray) and y.shape == (0,)):
            # no instances learn nothing, as a feature block of no columns: a producer that
            # flushes its buffer on a timer sends such blocks, and each was a dead letter
            return 0
        y = check_labels(y, "labels 'y'")
        if y.shape[0] != X.shape[0]:
            raise InvalidInput(f"{X.shape[0]} instances but {y.shape[0]} labels")
        check_finite(X, "instance block 'X'")
        problem = self._label_problem(header["algorithm"], algo, y)
        if problem is not None:
            raise InvalidInput(f"rejected by {header['algorithm']}: {problem}")
        self._mutating = True
        try:
            # the learner's advice at the stream's start names the columns the open named
            with naming_columns(self._naming.rule_names(stream, header)):
                if getattr(algo, "_partial", False) and algo.n_seen_ == 0:
                    # a partial-input learner reads only the attributes it observes, so it
                    # gives no advice on the data; the worker has the whole block (and a
                    # producer other than streamfs's may not have advised)
                    for advice in open_advice(algo, X=X):
                        warnings.warn(advice, UserWarning, stacklevel=1)
                algo.partial_fit(_as_format(X, "csr"), y)
        except ValueError as exc:
            raise InvalidInput(f"rejected by {header['algorithm']}: {exc}") from None
        return X.shape[0]

    @staticmethod
    def _label_problem(name: str, algo: Any, y: np.ndarray) -> str | None:
        """Why an instance block's labels would be refused (continuous values, mixed types, a
        class too many beside those the learner knows), as the producers check them: said
        before the learner is entered, such a block is refused without the replay that a
        refusal from inside the learner costs (its state may be half-changed then)."""
        spec = registry.get(name)
        problem = label_problem(y, name, min_classes=1, continuous=spec.continuous_labels)
        # the classes of earlier blocks: GDM's window keeps them in classes_seen_
        known = getattr(algo, "classes_seen_", None)
        known = np.asarray(getattr(algo, "classes_", []) if known is None else known).tolist()
        if problem is None and known:
            try:
                # with the types y had on the wire (check_labels refused a list of mixed types):
                # in one list with the known classes, numpy made True 1 and 1 "1"
                check_label_types(y, known)
            except ValueError as exc:
                return (f"{exc}; the stream's labels so far are {', '.join(map(repr, known))}: "
                        f"send labels of their type")
            if spec.binary_only:
                problem = label_problem([*known, *np.unique(y).tolist()], name, True,
                                        min_classes=1)
        return problem

    @staticmethod
    def _counters(algo: Any, header: dict, fitted: bool) -> dict:
        counters = {"rejected_messages": header["rejected"]}
        if not fitted:
            return counters
        for name in ("n_features_seen_", "n_irrelevant_", "n_redundant_", "n_seen_", "mistakes_",
                     "n_refits_"):
            value = getattr(algo, name, None)
            if value is not None:
                counters[name.rstrip("_")] = int(value)
        return counters

    # ----------------------------------------------------------------- persistence
    def _persist(self, stream: str, header: dict, *, algo_state: dict, extra: dict,
                 writes: list[tuple[str, bytes | None]]) -> None:
        columns = algo_state.pop("columns", {}) or {}
        old_states = header["states"]
        states = {k: v for k, v in old_states.items() if k.startswith("__")}  # written at open
        stale: list[str] = []
        # an entry larger than a record may be (OFS's running statistics of a million
        # features: 24 MB) is written in parts, each a record of the changelog; 512 bytes of
        # the budget for the rest of a part's key (entry name, digest, part number)
        part = self.value_budget(stream.encode()) - 512
        for name, value in list(algo_state.items()) + list(extra.items()):
            name = str(name)
            data = packb(value)
            parts = [data[i:i + part] for i in range(0, len(data), part)] or [data]
            ref = content_digest(data) + (f"+{len(parts)}" if len(parts) > 1 else "")
            states[name] = ref
            if old_states.get(name) != ref:
                writes.extend(zip(state_keys(stream, name, ref), parts))
        for name, ref in old_states.items():
            if states.get(name) != ref:
                stale.extend(state_keys(stream, name, ref))
        old_cols = set(header["columns"])
        new_cols = sorted(int(f) for f in columns)
        for f in new_cols:
            if f not in old_cols:
                writes.append((column_key(stream, f), pack_column(columns[f])))
        header["states"] = states
        header["columns"] = new_cols
        writes.append((header_key(stream), packb(header)))
        for f in sorted(old_cols - set(new_cols)):
            writes.append((column_key(stream, f), None))
        writes.extend((key, None) for key in stale)

    def _reject(self, stream: str | None, raw: bytes | None, reason: str, origin: dict) -> Plan:
        reason = clipped(reason)
        plan = Plan(stream=stream, reason=reason)
        if self.log_dead_letters:
            log.warning("dead letter for stream %r: %s", stream, reason)
        # The dead letter must fit the dead-letter topic: one that did not fit failed its
        # transaction again on every replay, and the worker made no more progress. It keeps
        # the original whole where that fits, else the original's first KiB. The worker keys
        # it by its stream, else by the record's own key.
        budget = self.value_budget(stream.encode() if stream else self._key_bytes)
        whole = raw is None or len(raw) <= budget
        record = {
            "kind": "dead_letter", "stream": stream, "reason": reason,
            "original": None if raw is None else bytes(raw if whole else raw[:1024]),
            "original_truncated": not whole,
            # the whole's size: a first KiB alone does not say how much is gone
            "original_size": None if raw is None else len(raw),
            "run": self._run_of_message, "run_refused": self._refused_run,
            **{k: v for k, v in origin.items() if v is not None},
        }
        plan.dead_letter = encode_as(record, self.output_format)
        if len(plan.dead_letter) > budget and raw is not None and whole:
            record.update(original=bytes(raw[:1024]), original_truncated=True)
            plan.dead_letter = encode_as(record, self.output_format)
        return plan

    def value_budget(self, key: bytes) -> int:
        """The largest record value the worker writes under ``key``: the output topics'
        ``max.message.bytes`` (at most the worker's limit) less the key and a record's
        overhead."""
        return self.output_bytes - RECORD_OVERHEAD - len(key)
