"""Cut a dataset into the messages of a stream (pure: no Kafka).

Blocks are bounded by bytes, not counts: a stream processor handles a few thousand messages a
second, so each message should carry as many columns or instances as fit the size limit.

The worker's own checks run first (:mod:`streamfs.algorithms.opening`,
:mod:`streamfs.producers.checks`): a stream it would refuse raises ``ValueError`` before its
``open`` is yielded (:class:`~streamfs.producers.errors.InputDataError` when the data is at
fault); a chunk of an instance stream it would refuse (NaN or infinite values, values beyond
what the algorithm's sums hold, labels it cannot use) raises ``InputDataError`` before its
blocks are yielded.
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from streamfs.algorithms import registry
from streamfs.algorithms._validation import lazy_problem, shown
from streamfs.codec import run_token_problem
from streamfs.algorithms.opening import (check_open, check_stored_column, check_stream_id,
                                         check_values)
from streamfs.producers.checks import (ENVELOPE_BYTES, check_block_bytes, check_chunk,
                                       check_groups_apply, row_bytes, sendable, sendable_labels,
                                       wire_params)
from streamfs.producers.delimited import refuse_duplicate_names
from streamfs.producers.errors import InputDataError, InputFileError, InputLabelError

#: payload budget per message when the topic's limit is unknown; below the 1 MiB default limit
#: of Kafka brokers
DEFAULT_BLOCK_BYTES = 900 * 1024
#: the most a message carries when its topic accepts more: every message costs the producer,
#: the broker and the worker a fixed amount of work (a step, a result, a fetch), and at 4 MiB
#: the worker's in-process path ran 30-40 % faster than at 900 KiB on the bench's streams,
#: no faster at 7.5 MiB
MAX_BLOCK_BYTES = 4 * 1024 * 1024


def _matrix(X: Any, sparse_format: str) -> Any:
    """``X`` as a sparse matrix of ``sparse_format`` or a 2-D array; :class:`InputDataError`
    for other shapes (and a lazy frame), as :func:`~streamfs.producers.objects.from_objects`."""
    if (problem := lazy_problem(X)) is not None:
        raise InputDataError(problem)
    X = X.asformat(sparse_format) if sp.issparse(X) else np.asarray(X)
    if X.ndim != 2:
        raise InputDataError(f"X must be 2-D (instances x features), got shape {X.shape}")
    return X


def _labels(y: Any) -> np.ndarray:
    """``y`` as sent (:func:`~streamfs.producers.checks.sendable_labels`);
    :class:`InputLabelError` for none at all (numpy makes ``None`` one label)."""
    if y is None:
        raise InputLabelError("the labels are missing (y is None): give one label per row of X")
    return sendable_labels(y)


def _feature_names(names: Sequence[Any] | None, n: int, of: str) -> list[str] | None:
    """``names`` as they travel, one ``str`` per column (integers as their digits, as a
    DataFrame's columns are named), or :class:`InputDataError` when there are not ``n`` of them
    (``of``: what there are ``n`` of) or the worker would refuse them, or take two features for
    one: a name that is not text, is not valid Unicode or repeats.

    >>> _feature_names(["a", 1], 2, "2 columns")
    ['a', '1']
    >>> _feature_names(["a", "b", "a"], 3, "3 columns")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    streamfs.producers.errors.InputDataError: feature_names: duplicate feature name 'a' ...
    """
    if names is None:
        return None
    if len(names) != n:
        raise InputDataError(f"{len(names)} feature names for {of}")
    texts = names.tolist() if isinstance(names, np.ndarray) else list(names)
    if set(map(type, texts)) - {str}:  # one by one only then: millions of columns
        bad = next((j for j, v in enumerate(texts) if isinstance(v, bool)
                    or not isinstance(v, (str, int, np.integer))), None)
        if bad is not None:  # the worker takes text only; str() made None "None", b"a" "b'a'"
            raise InputDataError(f"feature_names: the name at position {bad} is "
                                 f"{type(texts[bad]).__name__} {shown(texts[bad])}, not text: "
                                 f"give each feature a str (or an integer)")
        texts = [str(v) for v in texts]
    try:
        "".join(texts).encode("utf-8")  # one pass in C; the loop below names the culprit
    except UnicodeEncodeError:
        for j, text in enumerate(texts):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise InputDataError(f"feature_names: the name at position {j} "
                                     f"({shown(text)}) is not valid Unicode text (a lone "
                                     f"surrogate): names travel as UTF-8") from None
    if len(set(texts)) != n:
        try:
            refuse_duplicate_names(texts, "feature_names", kind="feature")
        except InputFileError as exc:  # no file here: the caller's argument
            raise InputDataError(str(exc)) from None
    return texts


def check_shuffle_seed(seed: Any) -> None:
    """``ValueError`` naming ``shuffle_seed`` unless it is None or an integer >= 0 (the
    seed of numpy's generator).

    >>> check_shuffle_seed(-1)
    Traceback (most recent call last):
    ...
    ValueError: shuffle_seed must be None or an integer >= 0, got -1
    """
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))
                             or seed < 0):
        raise ValueError(f"shuffle_seed must be None or an integer >= 0, got {shown(seed)}")


def block_budget(message_limit: int | None) -> int:
    """The payload budget per message for a topic that accepts records of ``message_limit``
    bytes: 7/8 of it (room for the envelope, column names and maps), at most
    :data:`MAX_BLOCK_BYTES`; :data:`DEFAULT_BLOCK_BYTES` when the limit is unknown.

    >>> block_budget(None), block_budget(1048588), block_budget(8388608)
    (921600, 917514, 4194304)
    """
    if message_limit is None:
        return DEFAULT_BLOCK_BYTES
    return max(1, min(MAX_BLOCK_BYTES, message_limit * 7 // 8))


def column_value_bytes(X: Any) -> np.ndarray:
    """The bytes of each column's values as a block counts them (sparse: each non-zero's value
    and row index, and 8 for the column's pointer).

    >>> column_value_bytes(np.zeros((10, 2))).tolist()
    [80, 80]
    """
    if sp.issparse(X):
        X = X.tocsc()
        per_nonzero = X.data.itemsize + X.indices.itemsize
        return np.diff(X.indptr).astype(np.int64) * per_nonzero + 8
    return np.full(X.shape[1], X.shape[0] * X.dtype.itemsize, dtype=np.int64)


def _cumulative_bytes(X: Any, extra: np.ndarray | None) -> np.ndarray:
    """``c[j]``: the bytes of columns ``0..j-1`` with their ``extra``; columns ``a..b-1`` take
    ``c[b] - c[a]``."""
    per_column = column_value_bytes(X) + (0 if extra is None else extra)
    return np.concatenate([[0], np.cumsum(per_column, dtype=np.int64)])


def _check_sizes(block_bytes: Any, most: Any, name: str) -> None:
    """``ValueError`` naming a block's budget that is not a positive whole number of bytes,
    or a most items per block (``name``) that is neither None nor a positive integer: 0
    meant no limit, and less than 0 one item a message.

    >>> _check_sizes(1000, 0, "max_rows")
    Traceback (most recent call last):
    ...
    ValueError: max_rows must be None or an integer >= 1, got 0
    """
    check_block_bytes(block_bytes, None)
    if block_bytes is None:
        raise ValueError("block_bytes must be a whole number of bytes, got None")
    if most is not None and (isinstance(most, bool) or not isinstance(most, (int, np.integer))
                             or most < 1):
        raise ValueError(f"{name} must be None or an integer >= 1, got {shown(most)}")


def column_blocks(X: Any, block_bytes: int = DEFAULT_BLOCK_BYTES,
                  boundaries: Sequence[int] | None = None,
                  extra: np.ndarray | None = None,
                  max_columns: int | None = None) -> Iterator[tuple[int, int]]:
    """Yield ``(start, stop)`` column ranges of at most ``block_bytes`` (and ``max_columns``)
    each.

    ``boundaries`` (sorted column positions) are never split: a range may end only at one of
    them, so a group of columns always travels in one message (a group larger than the budget
    gets a message of its own). ``extra[j]``: bytes column ``j`` adds besides its values (its
    name, its source index), counted in the budget.

    >>> list(column_blocks(np.zeros((10, 7)), block_bytes=240))
    [(0, 3), (3, 6), (6, 7)]
    >>> list(column_blocks(np.zeros((10, 7)), block_bytes=240, extra=np.full(7, 40)))
    [(0, 2), (2, 4), (4, 6), (6, 7)]
    >>> list(column_blocks(np.zeros((10, 7)), max_columns=2))
    [(0, 2), (2, 4), (4, 6), (6, 7)]
    """
    _check_sizes(block_bytes, max_columns, "max_columns")
    n = X.shape[1]
    total = _cumulative_bytes(X, extra)

    def cost(j0: int, j1: int) -> int:
        return int(total[j1] - total[j0])

    cuts = list(boundaries) if boundaries is not None else list(range(1, n + 1))
    if cuts and cuts[-1] != n:
        cuts.append(n)
    start = 0
    prev = 0
    for cut in cuts:
        if cut <= prev:
            continue
        if prev > start and ((max_columns is not None and cut - start > max_columns)
                             or cost(start, cut) > block_bytes):
            yield start, prev
            start = prev
        prev = cut
    if prev > start:
        yield start, prev


def _column_extra(n: int, names: list[str] | None, listed: int) -> np.ndarray | None:
    """The bytes each of ``n`` columns adds to a block besides its values: its name (UTF-8
    with msgpack's header) and ``listed`` integers per column (source index, group id)."""
    if names is None and not listed:
        return None
    extra = np.full(n, 9 * listed, dtype=np.int64)
    if names is not None:
        extra += [len(name.encode("utf-8")) + 5 for name in names]
    return extra


def largest_column_bytes(X: Any, *, feature_names: Sequence[str] | None = None,
                         groups: Sequence[Sequence[int]] | None = None,
                         shuffle_seed: int | None = None) -> int:
    """The bytes of the largest column of a feature stream from ``X`` as its blocks count them
    (values, and the name and source index or group id it travels with; see
    :func:`feature_stream_messages`): the smallest ``block_bytes`` under which every column
    fits its message.

    >>> largest_column_bytes(np.zeros((10, 3)), feature_names=["a", "b", "long"])
    89
    """
    X = sendable(_matrix(X, "csc"))
    n = X.shape[1]
    checked = _feature_names(feature_names, n, f"{n} columns")
    if not n:
        return 0
    values = column_value_bytes(X)
    order, gid, _ = feature_order(n, groups, shuffle_seed)
    reordered = not np.array_equal(order, np.arange(n))
    names = None if checked is None else [checked[j] for j in order]
    extra = _column_extra(n, names, int(reordered) + int(gid is not None))
    return int((values[order] + (0 if extra is None else extra)).max())


def row_blocks(X: Any, block_bytes: int = DEFAULT_BLOCK_BYTES,
               max_rows: int | None = None) -> Iterator[tuple[int, int]]:
    """Yield ``(start, stop)`` row ranges of at most ``block_bytes`` (and ``max_rows``) each.

    Every range has at least one row.

    >>> list(row_blocks(np.zeros((5, 3)), block_bytes=64)), list(row_blocks(np.zeros((5, 3)), max_rows=2))
    ([(0, 2), (2, 4), (4, 5)], [(0, 2), (2, 4), (4, 5)])
    """
    _check_sizes(block_bytes, max_rows, "max_rows")
    n = X.shape[0]
    per_row = row_bytes(X.tocsr() if sp.issparse(X) else X)
    start, acc = 0, 0
    limit = max_rows or n
    for i in range(n):
        if i > start and (acc + per_row[i] > block_bytes or i - start >= limit):
            yield start, i
            start, acc = i, 0
        acc += int(per_row[i])
    if n > start:
        yield start, n


def feature_order(n_columns: int, groups: Sequence[Sequence[int]] | None = None,
                  shuffle_seed: int | None = None
                  ) -> tuple[np.ndarray, np.ndarray | None, list[int] | None]:
    """The order in which columns are sent: ``(order, group_ids, boundaries)``.

    ``order[k]`` is the source index of the k-th column sent. With ``groups``, columns go group
    by group (a group's id is its position in ``groups``); a seed shuffles the group order and
    the columns within each group, or, without groups, all columns.

    >>> feature_order(4, shuffle_seed=2)[0].tolist()
    [3, 2, 0, 1]
    >>> order, gid, bounds = feature_order(4, groups=[[2, 3], [0, 1]], shuffle_seed=5)
    >>> order.tolist(), gid.tolist(), bounds
    ([1, 0, 2, 3], [1, 1, 0, 0], [2, 4])
    """
    check_shuffle_seed(shuffle_seed)
    rng = np.random.default_rng(shuffle_seed) if shuffle_seed is not None else None
    if groups is None:
        order = rng.permutation(n_columns) if rng is not None else np.arange(n_columns)
        return order, None, None
    from streamfs.algorithms._validation import group_members  # (imports scikit-learn)

    members = group_members(groups, n_columns, "the columns")
    order_of_groups = rng.permutation(len(members)) if rng is not None else range(len(members))
    parts, gid = [], []
    for g in order_of_groups:
        parts.append(rng.permutation(members[g]) if rng is not None else members[g])
        gid.append(np.full(len(members[g]), g))
    order = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
    bounds = np.cumsum([len(p) for p in parts]).tolist()
    return order, np.concatenate(gid) if gid else np.empty(0, dtype=np.int64), bounds


def open_fields(*, run: str | None = None, replace: bool = False,
                naming: dict | None = None) -> dict:
    """The fields every stream's ``open`` shares: the ``run`` token (random unless given: it
    tells a redelivered message from a new run re-using the stream id), ``replace`` (start a new
    run of an existing stream) and the naming rule of unnamed features (``name_prefix``,
    ``name_base``: ``{"name_prefix": "", "name_base": 1}`` names LIBSVM features by their index
    as written in the file).

    >>> sorted(open_fields(run="r1", replace=True, naming={"name_prefix": ""}).items())
    [('name_prefix', ''), ('replace', True), ('run', 'r1')]
    """
    if run is not None and (problem := run_token_problem(run)):
        raise ValueError(problem)  # the worker would refuse the stream's every message
    fields: dict = {"run": run or uuid.uuid4().hex[:16]}
    if replace:
        fields["replace"] = True
    fields.update(naming or {})
    return fields


def feature_stream_messages(stream: str, X: Any, y: Any, algorithm: str, params: dict | None = None,
                            *, groups: Sequence[Sequence[int]] | None = None,
                            block_bytes: int = DEFAULT_BLOCK_BYTES,
                            shuffle_seed: int | None = None,
                            feature_names: Sequence[str] | None = None,
                            run: str | None = None, replace: bool = False,
                            naming: dict | None = None,
                            record_limit: int | None = None,
                            max_columns: int | None = None,
                            buffer_cap: int | None = None) -> Iterator[dict]:
    """The messages of a feature stream: ``open`` (with ``y``), column blocks, ``close``.

    With ``feature_names`` (one per source column), every block carries the ``names`` of its
    columns, so results name the features.

    With ``groups`` (index arrays partitioning the columns), columns are sent group by group,
    each block carrying the group id (the group's position in ``groups``) of every column.
    ``shuffle_seed`` sends the columns in a seeded random order (see :func:`feature_order`).
    Whenever the sent order is not the source order, each block has ``columns``: the source
    column index of each of its columns. ``record_limit``: the largest record the worker
    stores (a stream whose kept columns, or any one column's message, would not fit is
    refused). ``max_columns``: the most columns a block carries (a group is never split).
    ``buffer_cap``: the most the worker lets ``max_buffer_bytes`` be
    (STREAMFS_MAX_BUFFER_BYTES; a stream asking for more is refused, and one that sets none is
    checked with the cap where it is below the algorithm's default, as the worker runs it).
    """
    check_stream_id(stream)
    X = sendable(_matrix(X, "csc"))
    y = _labels(y)  # float16 widened; complex, dates refused before the 'open'
    if y.ndim == 0 or y.shape[0] != X.shape[0]:
        # the open would carry N = len(y) and every block columns of another length, each
        # block dead-lettered and the stream closed with an empty selection
        raise InputDataError(f"X has {X.shape[0]} rows but there are {y.size} labels")
    if y.ndim != 1:  # the worker refuses the open's y (from_objects flattens a column vector)
        raise InputDataError(f"the labels must be 1-D (one per row), got shape {y.shape}")
    check_groups_apply(algorithm, groups)
    spec = registry.get(algorithm)  # an unknown name: ValueError
    try:  # the labels are the data's fault, as its values are: InputDataError for both
        spec.check_labels(y)
    except ValueError as exc:
        raise InputLabelError(str(exc)) from None
    _, algo, _ = check_open("features", algorithm, params, y=y, buffer_cap=buffer_cap)
    sent_params = wire_params(params)  # before the 'open': every value must encode
    if record_limit is not None:
        check_stored_column(y.shape[0], record_limit)
    names = _feature_names(feature_names, X.shape[1], f"{X.shape[1]} columns")
    try:
        check_values("features", algo, X, names=names)
    except ValueError as exc:  # the data's fault
        raise InputDataError(str(exc)) from None
    labels = y.tolist() if y.dtype.kind in "OUS" else y
    order, gid, boundaries = feature_order(X.shape[1], groups, shuffle_seed)
    reordered = not np.array_equal(order, np.arange(X.shape[1]))
    if reordered:
        X = X[:, order]
    sent_names = None if names is None else [names[j] for j in order]
    extra = _column_extra(X.shape[1], sent_names, int(reordered) + int(gid is not None))
    if record_limit is not None:
        _check_column_messages(X, extra, order, sent_names, stream, record_limit)
    blocks = list(column_blocks(X, block_bytes, boundaries, extra, max_columns))
    if record_limit is not None and gid is not None:
        _check_group_blocks(X, blocks, extra, gid, order, stream, record_limit)
    head = open_fields(run=run, replace=replace, naming=naming)
    yield {"kind": "open", "stream": stream, "seq": 0, "algorithm": algorithm,
           "params": sent_params, "y": labels, **head}
    seq = 0
    for a, b in blocks:
        seq += 1
        # dense blocks column-major: the worker reads them column by column, no transpose
        block = X[:, a:b] if sp.issparse(X) else np.asfortranarray(X[:, a:b])
        msg = {"kind": "features", "stream": stream, "seq": seq, "start": a, "X": block,
               "run": head["run"]}
        if gid is not None:
            msg["groups"] = gid[a:b].tolist()
        if reordered:
            msg["columns"] = order[a:b].tolist()
        if sent_names is not None:
            msg["names"] = sent_names[a:b]
        yield msg
    yield {"kind": "close", "stream": stream, "seq": seq + 1, "run": head["run"]}


def _check_column_messages(X: Any, extra: np.ndarray | None, order: np.ndarray,
                           names: list[str] | None, stream: str, record_limit: int) -> None:
    """``InputDataError`` before the ``open`` when a column (``X``'s, in the order sent) is
    alone more bytes than a record may hold: its values as a block carries them, its name and
    source index (``extra``) and an envelope. A column travels whole in one message, and
    :func:`~streamfs.algorithms.opening.check_stored_column` counts 8 bytes a value where a
    sparse block takes 12 a non-zero: found only at its block, it left the stream open."""
    values = column_value_bytes(X)
    own = values + (0 if extra is None else extra)
    envelope = ENVELOPE_BYTES + 2 * len(stream.encode())  # the id is the key and in the value
    over = np.flatnonzero(own + envelope > record_limit)
    if not over.size:
        return
    k = int(over[np.argmin(order[over])])  # the first in the source's order
    rest = int(own[k] - values[k])
    named = "" if names is None else f" ({shown(names[k])})"
    others = f" (and {over.size - 1} more)" if over.size > 1 else ""
    parts = f"{int(values[k])} of values, " + (f"{rest} of name and index, " if rest else "")
    dense = X.shape[0] * X.dtype.itemsize
    if rest > values[k]:
        advice = "shorten its name"
    elif sp.issparse(X) and dense + rest + envelope <= record_limit:
        advice = f"send X dense (X.toarray()): a column would take {dense} bytes of values"
    else:
        advice = "raise STREAMFS_MAX_MESSAGE_BYTES and the topics' max.message.bytes"
    raise InputDataError(
        f"column {int(order[k])}{named}{others} needs {int(own[k]) + envelope} bytes in one "
        f"message ({parts}{envelope} of envelope), over the record limit of {record_limit} "
        f"bytes (the topic's max.message.bytes, or the worker's STREAMFS_MAX_MESSAGE_BYTES): "
        f"a column travels whole in one message; {advice}")


def _check_group_blocks(X: Any, blocks: list[tuple[int, int]], extra: np.ndarray | None,
                        gid: np.ndarray, order: np.ndarray, stream: str,
                        record_limit: int) -> None:
    """``InputDataError`` before the ``open`` when a group's columns and a block's envelope
    (as for one column: :func:`_check_column_messages`) are more bytes than a record may hold:
    a group travels in one message, so the stream could not be sent whole (found only after
    the ``open``, it left the stream open on the topic)."""
    total = _cumulative_bytes(X, extra)
    envelope = ENVELOPE_BYTES + 2 * len(stream.encode())
    for a, b in blocks:
        size = int(total[b] - total[a]) + envelope
        if size > record_limit and gid[a] == gid[b - 1]:
            columns = order[a:b].tolist()
            shown = ", ".join(map(str, columns[:5])) + (", ..." if len(columns) > 5 else "")
            raise InputDataError(
                f"group {int(gid[a])} ({b - a} columns: {shown}) needs {size} bytes in one "
                f"message, over the record limit of {record_limit} bytes (the topic's "
                f"max.message.bytes, or the worker's STREAMFS_MAX_MESSAGE_BYTES): a group "
                f"travels in one message; split it into smaller groups")


def instance_stream_messages(stream: str, X: Any, y: Any, algorithm: str,
                             params: dict | None = None, *, feature_names: list[str] | None = None,
                             block_bytes: int = DEFAULT_BLOCK_BYTES,
                             max_rows: int | None = None, **open_kw: Any) -> Iterator[dict]:
    """The messages of an instance stream: ``open`` (with d), row blocks with labels, ``close``.
    ``open_kw``: ``run``, ``replace``, ``naming`` (see :func:`open_fields`), ``record_limit``
    and ``buffer_cap`` (see :func:`instance_messages_from_chunks`)."""
    X = _matrix(X, "csr")
    y = _labels(y)  # as np.asarray, but a list's ints spanning int64 and uint64 refused
    yield from instance_messages_from_chunks(stream, [(X, y)], X.shape[1], algorithm,
                                             params, feature_names=feature_names,
                                             block_bytes=block_bytes, max_rows=max_rows,
                                             **open_kw)


def _stack(blocks: list[tuple[Any, np.ndarray]]) -> tuple[Any, np.ndarray]:
    if len(blocks) == 1:
        return blocks[0]
    Xs = [b[0] for b in blocks]
    X = sp.vstack(Xs, format="csr") if sp.issparse(Xs[0]) else np.concatenate(Xs)
    return X, np.concatenate([b[1] for b in blocks])


def instance_messages_from_chunks(stream: str, chunks: Iterable[tuple[Any, Any]],
                                  n_features: int, algorithm: str, params: dict | None = None,
                                  *, feature_names: list[str] | None = None,
                                  block_bytes: int = DEFAULT_BLOCK_BYTES,
                                  max_rows: int | None = None, run: str | None = None,
                                  replace: bool = False,
                                  naming: dict | None = None,
                                  record_limit: int | None = None,
                                  buffer_cap: int | None = None) -> Iterator[dict]:
    """An instance stream from row chunks ``(X, y)`` read incrementally (d known up front).

    Chunks are re-cut into byte-bounded blocks; a chunk's last, partial block waits for the
    next chunk, so message boundaries do not depend on how the reader chunked the file. Each
    chunk is checked as the worker checks it (values, labels, rows wider than
    ``record_limit``), the first before the ``open``; ``buffer_cap``: see
    :func:`feature_stream_messages`.

    >>> chunks = [(np.ones((3, 2)), np.zeros(3)), (np.ones((2, 2)), np.zeros(2))]
    >>> msgs = list(instance_messages_from_chunks("s", chunks, 2, "ofs", block_bytes=100))
    >>> [m["kind"] for m in msgs], [m["X"].shape[0] for m in msgs[1:-1]]
    (['open', 'instances', 'instances', 'close'], [4, 1])
    """
    check_stream_id(stream)
    spec, algo, _ = check_open("instances", algorithm, params, n_features=n_features,
                               buffer_cap=buffer_cap)
    sent_params = wire_params(params)  # before the 'open': every value must encode
    head = open_fields(run=run, replace=replace, naming=naming)
    names = _feature_names(feature_names, n_features, f"d = {n_features}")
    rows = 0
    seen: set = set()

    def checked(X: Any, y: Any) -> tuple[Any, np.ndarray]:
        nonlocal rows
        X, y = check_chunk(spec, algo, X, y, n_features, rows, names, seen, record_limit)
        rows += X.shape[0]
        return X, y

    # check the first chunk before 'open': a source that is bad from the start publishes nothing
    it = iter(chunks)
    first = next(it, None)
    if first is not None:
        first = checked(*first)
    yield {"kind": "open", "stream": stream, "seq": 0, "algorithm": algorithm,
           "params": sent_params, "n_features": int(n_features),
           "feature_names": names, **head}
    seq = 0
    pending: list[tuple[Any, np.ndarray]] = []
    later = (checked(*chunk) for chunk in it)
    for X, y in itertools.chain([first] if first is not None else [], later):
        if X.shape[0] == 0:
            continue
        X, y = _stack(pending + [(X, y)])
        ranges = list(row_blocks(X, block_bytes, max_rows))
        for a, b in ranges[:-1]:
            seq += 1
            yield _instances(stream, seq, X[a:b], y[a:b], head["run"])
        a, b = ranges[-1]
        pending = [(X[a:b], y[a:b])]
    if pending:
        X, y = _stack(pending)
        for a, b in row_blocks(X, block_bytes, max_rows):
            seq += 1
            yield _instances(stream, seq, X[a:b], y[a:b], head["run"])
    yield {"kind": "close", "stream": stream, "seq": seq + 1, "run": head["run"]}


def _instances(stream: str, seq: int, X: Any, y: np.ndarray, run: str) -> dict:
    labels = y.tolist() if y.dtype.kind in "OUS" else y
    return {"kind": "instances", "stream": stream, "seq": seq, "X": X, "y": labels, "run": run}
