"""What a publish checks before its ``open``, shared by ``streamfs produce`` and the Python API
(:func:`~streamfs.producers.publish.produce_features`,
:func:`~streamfs.producers.publish.produce_instances`): a stream the worker would refuse is
never started.

>>> catalogue_role("p.instances"), catalogue_role("p.selected-features"), catalogue_role("mine")
('instances', 'selected', None)
"""

from __future__ import annotations

import itertools
import numbers
import warnings
from typing import Any, Iterable, Iterator

import numpy as np
import scipy.sparse as sp

from streamfs.algorithms import registry
from streamfs.algorithms.opening import check_open, check_values, open_advice
from streamfs.producers.errors import (BlockBytesOverLimit, BlockBytesTooSmall, InputDataError,
                                      InputLabelError)

#: a chunk of an instance source: rows ``X`` and their labels ``y``
Chunk = tuple[Any, Any]

#: dtype kinds the codec carries (bool, signed and unsigned integers, floats)
_NUMERIC_KINDS = "biuf"


def sendable(X: Any, what: str = "X") -> Any:
    """``X`` with a dtype the codec carries: float16 widened to float32 (exact); other
    non-numeric dtypes (object, complex, text, dates) refused with :class:`InputDataError`.

    >>> sendable(np.zeros((1, 2), dtype=np.float16)).dtype
    dtype('float32')
    """
    dtype = X.dtype
    if dtype.kind == "f" and dtype.itemsize < 4:
        return X.astype(np.float32)
    if dtype.kind not in _NUMERIC_KINDS:
        raise InputDataError(f"{what} has dtype {dtype}: only bool, integer and float values can "
                             f"be selected from; convert it first (e.g. X.astype(float))")
    return X


def sendable_labels(y: Any, what: str = "the labels") -> np.ndarray:
    """``y`` with a dtype the codec carries: float16 widened to float32 (exact); labels that
    cannot travel (complex, dates, text that is not valid Unicode, integers beyond 64 bits)
    refused with :class:`InputLabelError` naming ``what``.

    >>> sendable_labels(np.array([0, 1], dtype=np.float16)).dtype
    dtype('float32')
    """
    from streamfs.algorithms._validation import label_array, numbers_of_objects

    try:
        # integers no 64-bit type holds together: numpy (the worker's too) makes them floats
        y = label_array(y, what)
        if y.dtype.kind == "O":
            numbers_of_objects(y, what)
    except ValueError as exc:
        raise InputLabelError(str(exc)) from None
    kind = y.dtype.kind
    if kind == "f" and y.dtype.itemsize < 4:
        return y.astype(np.float32)
    if kind not in _NUMERIC_KINDS + "USO":  # bytes: label_problem names them
        raise InputLabelError(f"{what} have dtype {y.dtype}: a label is a number (bool, integer, "
                              f"float) or text; convert them first (e.g. y.astype(str))")
    if kind in "UO":
        items = y.ravel().tolist()
        wide = next((v for v in items if isinstance(v, int) and not -2 ** 63 <= v < 2 ** 64),
                    None)
        if wide is not None:
            raise InputLabelError(f"{what} hold {wide}: integer labels must fit in 64 bits to "
                                  f"travel; map them to classes first")
        texts = [v for v in items if isinstance(v, str)]
        try:
            "".join(texts).encode("utf-8")  # one pass in C; the loop names the culprit
        except UnicodeEncodeError:
            for v in texts:
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    raise InputLabelError(f"{what} hold {v!r}, not valid Unicode text (a lone "
                                          f"surrogate): labels travel as UTF-8") from None
    return y


def wire_params(params: dict | None) -> dict:
    """The ``params`` of an ``open`` as they travel: numpy arrays as lists (``classes`` of text
    labels, such as ``np.unique(y)``, would not encode), and ``ValueError`` naming a parameter
    whose value cannot travel in a message (an integer beyond 64 bits).

    >>> wire_params({"classes": np.array(["a", "b"])})
    {'classes': ['a', 'b']}
    >>> wire_params({"random_state": 2 ** 70})
    Traceback (most recent call last):
    ...
    ValueError: parameter 'random_state' = 1180591620717411303424 cannot travel in a message (integers must fit in 64 bits)
    """
    from streamfs.algorithms._validation import shown
    from streamfs.codec import packb

    out = {}
    for name, value in (params or {}).items():
        if isinstance(value, np.ndarray):
            value = value.tolist()
        try:
            packb(value)
        except (ValueError, TypeError, OverflowError) as exc:
            why = ("integers must fit in 64 bits" if isinstance(value, int) else str(exc))
            raise ValueError(f"parameter {name!r} = {shown(value)} cannot travel in a message "
                             f"({why})") from None
        out[name] = value
    return out


def catalogue_role(topic: str, plain: dict | None = None) -> str | None:
    """The catalogue role (features, instances, selected, dead_letter) whose suffix ends
    ``topic`` (the longest that does), or None for a topic outside the catalogue's naming;
    ``plain``: the catalogue without a prefix, if the caller has read it already."""
    from streamfs.topics import load_catalogue

    plain = load_catalogue("") if plain is None else plain
    matches = [(len(spec.name), role) for role, spec in plain.items()
               if topic.endswith(spec.name)]
    return max(matches)[1] if matches else None


def check_input_topic(kafka_config: dict[str, Any], topic: str) -> None:
    """:class:`~streamfs.topics.TopicMismatch` if ``topic``, an input topic of the catalogue,
    exists with another partition count than the catalogue's or a setting the worker refuses
    (``cleanup.policy=compact``, a smaller ``max.message.bytes``): the worker would not start
    on it, and what was published there would have to be published again once the topic is
    made anew. Nothing for a topic outside the catalogue's naming, or not created yet (the
    publish itself says so)."""
    from confluent_kafka.admin import AdminClient

    from streamfs.broker import make_client
    from streamfs.producers.kafka import admin_config
    from streamfs.topics import (TopicMismatch, config_problems, load_catalogue,
                                 partition_problems)

    role, prefix = _role_and_prefix(topic)
    if role not in ("features", "instances"):
        return
    spec = load_catalogue(prefix)[role]
    conf = admin_config(kafka_config)
    # asked for by name, a topic must not be made by a broker with auto.create.topics.enable
    admin = make_client(AdminClient, {**conf, "allow.auto.create.topics": False})
    meta = admin.list_topics(topic, timeout=10).topics.get(topic)
    if meta is None or meta.error is not None:
        return
    problems = [f"existing topic {line}" for line in
                partition_problems({topic: spec.partitions}, {topic: meta})]
    problems += config_problems(admin, [spec], conf.get("bootstrap.servers", "HOST:PORT"))[0]
    if problems:
        raise TopicMismatch("\n".join(problems) + "\nthe worker refuses the topic, so nothing "
                            "was published (`streamfs topics create` says how to fix it)")


def results_topic(topic: str, kind: str) -> str | None:
    """The selected-features topic of the catalogue ``topic`` belongs to (same prefix), where
    a stream id's existing results are; None for a topic outside the catalogue's naming.
    Refuses (:class:`ValueError`) a catalogue topic that does not take ``kind`` streams."""
    from streamfs.topics import load_catalogue

    role, prefix = _role_and_prefix(topic)
    if role is None:
        return None
    plain = load_catalogue("")
    if role != kind:
        raise ValueError(f"topic {topic!r} is the catalogue's {role} topic: {kind[:-1]} streams "
                         f"go to {prefix + plain[kind].name!r}")
    return prefix + plain["selected"].name


def _role_and_prefix(topic: str) -> tuple[str | None, str]:
    """The catalogue role whose name ends ``topic`` and the prefix before it; ``(None, "")``
    for a topic outside the catalogue's naming."""
    from streamfs.topics import load_catalogue

    plain = load_catalogue("")  # read once for the role and its name
    role = catalogue_role(topic, plain)
    return (role, topic[:len(topic) - len(plain[role].name)]) if role else (None, "")


def existing_stream(kafka_config: dict[str, Any], results: str, stream: str) -> dict | None:
    """The latest result of ``stream`` on the selected-features topic ``results``, if any."""
    from streamfs.client import TopicMissing, current_selection

    try:
        return current_selection(stream, kafka_config, results)
    except TopicMissing:  # topics not created yet: nothing exists
        return None


_A_STREAM = {"features": "a feature stream", "instances": "an instance stream"}


def exists_problem(stream: str, existing: dict | None, kind: str, other_id: str,
                   replace_option: str, replace: bool) -> str | None:
    """Why ``stream`` may not be published as a ``kind`` stream (``features``, ``instances``)
    given its ``existing`` latest result, naming the options (``other_id``,
    ``replace_option``) as the caller spells them; None if it may.

    An id with results of the other kind of stream is refused even with ``replace``: each
    input topic's streams are the worker's own, so the new stream would not replace the old
    one but publish versions from 1 again under the same key, among the old ones."""
    if existing is None:
        return None
    state = "closed" if existing.get("final") else "open"
    where = f"{state}, run {existing.get('run', 1)}, version {existing['version']}"
    spec = registry.ALGORITHMS.get(existing.get("algorithm"))
    if spec is not None and spec.kind != kind:
        return (f"stream {stream!r} already exists as {_A_STREAM[spec.kind]} of "
                f"{spec.name!r} ({where}): {_A_STREAM[kind]} under the same id would mix "
                f"its results with those, even with {replace_option}; choose {other_id}")
    if replace:
        return None
    return (f"stream {stream!r} already exists ({where}): choose {other_id}, or pass "
            f"{replace_option} to start a new run under the same id")


def continuing(messages: Iterator[dict], existing: dict | None) -> Iterator[dict]:
    """``messages`` with their ``open`` saying where the stream id's results stand (the run
    and version of ``existing``, its latest result): a worker that no longer holds the id's
    header (dropped after its retention) starts the new run after them, not at run 1,
    version 1, which readers keeping the highest version would never show."""
    head = next(messages)
    if existing is not None:
        head = {**head, "continue_from": {"run": existing.get("run", 1),
                                          "version": existing["version"]}}
    yield head
    yield from messages


def check_block_bytes(block_bytes: int | None, record_limit: int | None) -> None:
    """A payload budget per message must be a whole number of bytes, positive and within the
    record limit (``None``: not known yet, the other checks only)."""
    if block_bytes is not None and (isinstance(block_bytes, bool)
                                    or not isinstance(block_bytes, numbers.Integral)):
        raise ValueError(f"block_bytes must be a whole number of bytes, got {block_bytes!r}")
    if block_bytes is not None and block_bytes <= 0:
        raise ValueError(f"block_bytes must be more than 0, got {block_bytes!r}")
    if block_bytes is not None and record_limit is not None and block_bytes > record_limit:
        raise BlockBytesOverLimit(block_bytes, record_limit)


def check_budget(block_bytes: int | None, smallest: int, item: str) -> None:
    """:class:`BlockBytesTooSmall` when a ``block_bytes`` the caller chose is below
    ``smallest``, the bytes of the stream's largest ``item`` (``"column"``, ``"instance"``):
    the blocks never split an item, so it would go in a message of its own, over the budget."""
    if block_bytes is not None and block_bytes < smallest:
        raise BlockBytesTooSmall(block_bytes, smallest, item)


def row_bytes(X: Any) -> np.ndarray:
    """The bytes each row of ``X`` (CSR or dense) takes of an instance block's budget: its
    values (and their column indices, sparse) and 8 for its label.

    >>> row_bytes(np.zeros((2, 3))).tolist()
    [32, 32]
    """
    if sp.issparse(X):
        return np.diff(X.indptr) * (X.data.itemsize + X.indices.itemsize) + 8
    return np.full(X.shape[0], X.shape[1] * X.dtype.itemsize + 8)


#: what an instance source owes the two passes over it (a check, then the publish)
_SECOND_PASS = ("InstanceSource.chunks() must return a new iterator over the same rows on each "
                "call (a generator function, not a generator): the source is read once to "
                "check it (unless params gives the 'classes' and no block_bytes is given) and "
                "again to publish it")


def same_rows(chunks: Iterable[Chunk], expected: int) -> Iterator[Chunk]:
    """``chunks`` of the pass that publishes a source checked in a pass before: an
    :class:`InputDataError` as soon as they differ in their number of rows from the
    ``expected`` of that pass — before the ``open`` when they are none (a one-shot generator,
    used up by the check: its rows were silently lost), else once they pass it or end short
    (a source that yields other rows each time, such as a queue: they were never checked)."""
    rows = 0
    for X, y in chunks:
        rows += np.shape(X)[0]
        if rows > expected:
            break
        yield X, y
    if rows != expected:
        gave = f"more than {expected}" if rows > expected else str(rows)
        raise InputDataError(f"the source gave {gave} rows to publish, {expected} to the check "
                             f"before: {_SECOND_PASS}")


def check_groups_apply(algorithm: str, groups: Any, option: str = "groups=") -> None:
    """group-saola needs its groups; any other algorithm would ignore them. ``option``: how the
    caller spells the groups' argument, for the message."""
    if groups is not None and algorithm != "group-saola":
        raise ValueError(f"groups apply to group-saola only, not {algorithm!r}")
    if groups is None and algorithm == "group-saola":
        raise ValueError(f"group-saola needs the groups of the columns ({option}: a JSON list "
                         f"of lists of column indices)")


def check_labels_of_block(spec: Any, y: Any, n_rows: int, first_row: int, seen: set,
                          classes: Any = None) -> np.ndarray:
    """The labels of one block of an instance stream as they are sent
    (:func:`sendable_labels`); ``InputDataError`` when they would be refused:
    not one per row, or (``InputLabelError``) missing or unusable values, a label that is not
    one of the ``classes`` the stream was opened with, or (``seen``: the classes of the blocks
    before, updated here) a class too many for a binary learner."""
    from streamfs.algorithms._validation import label_array, label_problem

    try:
        y = label_array(y, f"data rows {first_row}..{first_row + n_rows - 1}")
    except ValueError as exc:  # integers that would travel as floats
        raise InputLabelError(str(exc)) from None
    if y.ndim != 1 or y.shape[0] != n_rows:
        raise InputDataError(f"data rows {first_row}..{first_row + n_rows - 1}: {n_rows} "
                             f"instances but labels of shape {y.shape}")
    if not n_rows:
        return y
    y = sendable_labels(y, f"data rows {first_row}..{first_row + n_rows - 1}: the labels")
    problem = label_problem(y, spec.name, min_classes=1, continuous=spec.continuous_labels)
    if problem is not None:
        raise InputLabelError(f"data rows {first_row}..{first_row + n_rows - 1}: {problem}")
    distinct = np.unique(y).tolist()
    if classes is not None:  # the first pass over the source is skipped for them
        given = [np.asarray(c).item() for c in classes]
        # as one set, True and 1 are one class; the worker refuses the mix of types
        both = np.empty(len(given) + len(distinct), dtype=object)
        both[:] = given + distinct
        if (problem := label_problem(both, spec.name, min_classes=1)) is not None:
            raise InputLabelError(f"data rows {first_row}..{first_row + n_rows - 1} and the "
                                  f"classes {given} the stream was given: {problem}")
        known = set(given)
        other = sorted(set(distinct) - known, key=str)
        if other:
            row = _first_row_of(y, set(other))
            rest = [label for label in other if label != y[row].item()]
            raise InputLabelError(f"data row {first_row + row} (counted from 0): label "
                                  f"{y[row].item()!r} not among the classes "
                                  f"{sorted(known, key=str)} the stream was given"
                                  + (f"; rows {first_row}..{first_row + n_rows - 1} also have "
                                     f"{', '.join(map(repr, rest[:5]))}" if rest else ""))
    before = set(seen)
    seen.update(distinct)
    problem = label_problem(sorted(seen, key=str), spec.name, spec.binary_only, min_classes=1)
    if problem is not None:  # a class too many, counted over the blocks so far
        if not (spec.binary_only and len(seen) > 2):
            raise InputLabelError(f"data rows 0..{first_row + n_rows - 1}: {problem}")
        # the row that brought the third class (a file's 30,000th line, not "rows 0..n")
        row, classes_so_far = 0, set(before)
        for row, label in enumerate(y.tolist()):
            classes_so_far.add(label)
            if len(classes_so_far) > 2:
                break
        raise InputLabelError(f"data row {first_row + row} (counted from 0, label "
                              f"{y[row].item()!r}): {problem}")
    return y


def _first_row_of(y: np.ndarray, labels: set) -> int:
    """The first index of ``y`` whose label is one of ``labels``."""
    return next(i for i, label in enumerate(y.tolist()) if label in labels)


def check_chunk(spec: Any, algo: Any, X: Any, y: Any, n_features: int, first_row: int,
                names: Any, seen: set, record_limit: int | None = None) -> tuple[Any, Any]:
    """``(X, y)`` of one chunk of an instance stream as they are sent (see :func:`sendable`,
    :func:`sendable_labels`), checked
    as the worker checks it (width, values, labels, and, given the ``record_limit``, rows that
    would not fit one message); :class:`InputDataError` naming the rows otherwise."""
    X = sendable(X.tocsr() if sp.issparse(X) else np.asarray(X))
    if X.ndim != 2 or X.shape[1] != n_features:
        raise InputDataError(f"data rows from {first_row} on: a chunk of shape {X.shape}, the "
                             f"stream has d = {n_features}")
    try:
        check_values("instances", algo, X, first_row=first_row, names=names)
    except ValueError as exc:
        raise InputDataError(str(exc)) from None
    y = check_labels_of_block(spec, y, X.shape[0], first_row, seen,
                              getattr(algo, "classes", None))
    if record_limit is not None:
        check_row_width(X, first_row, record_limit)
    return X, y


#: room for the envelope of a block (an instance block, a feature column) besides its values
ENVELOPE_BYTES = 4096


def check_row_width(X: Any, first_row: int, record_limit: int) -> None:
    """``InputDataError`` naming the rows of ``X`` that alone would exceed ``record_limit``."""
    if sp.issparse(X):
        X = X.tocsr()
        width = np.diff(X.indptr) * (X.data.itemsize + X.indices.itemsize)
    else:
        width = np.full(X.shape[0], X.shape[1] * X.dtype.itemsize)
    wide = np.flatnonzero(width + ENVELOPE_BYTES > record_limit)
    if wide.size:
        raise InputDataError(
            f"data rows {(wide[:10] + first_row).tolist()}{' ...' if wide.size > 10 else ''} "
            f"need {int(width[wide[0]])} bytes each, over the record limit of {record_limit} "
            f"bytes (the topic's max.message.bytes, or STREAMFS_MAX_MESSAGE_BYTES)")


def scan_instances(src: Any, algorithm: str, params: dict | None,
                   record_limit: int | None = None, block_bytes: int | None = None,
                   buffer_cap: int | None = None, advice: list[str] | None = None
                   ) -> tuple[np.ndarray, int]:
    """The distinct labels of an instance source and its number of rows, every chunk checked
    as the worker checks it (:func:`check_chunk`), in a pass over the source ahead of
    publishing; and, given the
    ``block_bytes`` the caller chose, every row within it (:func:`check_budget`, naming the
    widest row of the whole source). ``buffer_cap``: see :func:`check_open`. ``advice``, if
    given, gets what the algorithm will warn of at the stream's start (:func:`open_advice`
    on the first rows)."""
    spec, algo, _ = check_open("instances", algorithm, params, n_features=src.n_features,
                               buffer_cap=buffer_cap)
    seen: set = set()
    rows = widest = 0
    for X, y in src.chunks():
        X, y = check_chunk(spec, algo, X, y, src.n_features, rows, src.feature_names, seen,
                           record_limit)
        if advice is not None and rows == 0 and X.shape[0]:
            advice += open_advice(algo, X=X, names=src.feature_names)
        if block_bytes is not None and X.shape[0]:
            widest = max(widest, int(row_bytes(X).max()))
        rows += X.shape[0]
    check_budget(block_bytes, widest, "instance")
    return np.array(sorted(seen, key=str)), rows


def first_rows_advice(src: Any, chunks: Iterator[Chunk], algorithm: str, params: dict | None,
                      record_limit: int | None = None, buffer_cap: int | None = None
                      ) -> tuple[list[str], list[Chunk]]:
    """What the algorithm will warn of at the start of a stream from ``src``
    (:func:`open_advice` on its first rows), for a source that is not read whole ahead of
    publishing (its ``classes`` given), and the chunks read for it from ``chunks`` (the
    publish's own iterator: they are published first, so a one-shot source loses none). Only
    the chunks up to the first with rows are read, and checked as the worker checks them
    first, so that no advice stands beside a refusal of those rows."""
    spec, algo, _ = check_open("instances", algorithm, params, n_features=src.n_features,
                               buffer_cap=buffer_cap)
    read: list[Chunk] = []
    for X, y in chunks:
        read.append((X, y))
        X, _ = check_chunk(spec, algo, X, y, src.n_features, 0, src.feature_names, set(),
                           record_limit)
        if X.shape[0]:
            return open_advice(algo, X=X, names=src.feature_names), read
    return [], read


def result_size_advice(algo: Any, d: int, names: Any, record_limit: int | None) -> str | None:
    """What to say when an instance learner's full selection cannot be published: its ``B``
    selected features, each named in a result (``{"feature", "name", "score",
    "affiliated"}``), take more than a result record may (``record_limit`` less the record's
    overhead), so the worker would refuse every block that brings the selection there (the
    default ``B`` is a tenth of ``d``: 200,000 of 2 million features took 10.7 MB). A floor,
    from the ``B`` features whose entries encode shortest; None when it fits, or for an
    algorithm without a budget. Advice rather than a refusal: the selection may never grow to
    ``B`` on the data that comes."""
    if record_limit is None or not hasattr(algo, "_budget"):
        return None
    from streamfs.codec import packb
    from streamfs.worker.processor import RECORD_OVERHEAD

    B = algo._budget(int(d))
    room = record_limit - RECORD_OVERHEAD
    if B * 32 <= room:  # every entry takes more than 32 bytes: its keys alone take 31
        return None
    if names is not None:  # the worker's names; else they are at least the index's digits
        lengths = np.fromiter(map(len, names), dtype=np.int64, count=d)
        order = np.argsort(lengths, kind="stable")[:B]
        named = [(int(j), str(names[j])) for j in order]
    else:
        named = [(j, str(j)) for j in range(B)]
    floor = len(packb([{"feature": j, "name": name, "score": 0.0, "affiliated": []}
                       for j, name in named]))
    if floor <= room:
        return None
    fits = int(room * B // floor)
    return (f"{type(algo).__name__} keeps up to B = {B} of the {d} features "
            f"(n_features_to_select={algo.n_features_to_select!r}); a result naming them takes "
            f"at least {floor} bytes, over the {room} bytes a result may take "
            f"(STREAMFS_MAX_MESSAGE_BYTES, the topics' max.message.bytes): the worker will "
            f"refuse each block whose selection grows past about {fits} features. Pass "
            f"n_features_to_select={fits} or fewer, or raise both limits")


def check_instance_source(src: Any, algorithm: str, params: dict | None,
                          record_limit: int | None = None,
                          block_bytes: int | None = None, buffer_cap: int | None = None
                          ) -> tuple[dict, Iterator[Chunk]]:
    """The parameters to send for an instance stream from ``src`` and the chunks to publish
    (see below), every chunk checked as the worker would check it, its labels whole, in a pass
    over the source (:func:`scan_instances`) — unless ``params`` gives the ``classes`` and
    no ``block_bytes`` is given (checked against the source's widest row: :func:`check_budget`),
    when only the first chunk is read ahead, and the others are checked as they are published.
    What the algorithm will warn of at the stream's start (found in that pass, or in the
    first chunk: :func:`first_rows_advice`) is warned of here, once every check passed.
    ``buffer_cap``: the worker's cap on ``max_buffer_bytes`` (see
    :func:`streamfs.algorithms.opening.check_open`).

    The chunks to publish are a new call of ``src.chunks()`` after a pass, held to that
    pass's rows (:func:`same_rows`); with the ``classes`` and no ``block_bytes``, the one
    call's, the first chunks read for the advice included: a one-shot source is read once."""
    params = dict(params or {})
    advice: list[str] = []
    labels = None
    if params.get("classes") is not None and block_bytes is None:
        chunks: Iterator[Chunk] = iter(src.chunks())
        advice, read = first_rows_advice(src, chunks, algorithm, params, record_limit,
                                         buffer_cap)
        chunks = itertools.chain(read, chunks)
    else:  # a pass that checks every chunk (against the classes, if given)
        labels, rows = scan_instances(src, algorithm, params, record_limit, block_bytes,
                                      buffer_cap, advice)
        chunks = same_rows(src.chunks(), rows)
    try:
        _, algo, params = check_open("instances", algorithm, params,
                                     n_features=src.n_features, y=labels, buffer_cap=buffer_cap)
    except registry.LabelError as exc:  # the data's labels (one class): the data's fault
        if isinstance(exc, InputLabelError):
            raise
        raise InputLabelError(str(exc)) from None
    if (text := result_size_advice(algo, src.n_features, src.feature_names,
                                   record_limit)) is not None:
        advice.append(text)
    for text in advice:  # once the stream passed every check: no advice beside a refusal
        warnings.warn(text, UserWarning, stacklevel=3)  # produce_instances's caller
    params.pop("n_features", None)  # the worker takes d from the open message
    return params, chunks
