"""Downstream model: follow a stream's selection and train an online classifier on it.

It reads the selected-features topic and the instances topic from their beginning. Instances
of ``--instance-stream`` are used prequentially (predict, then learn) by a linear SGD
classifier (log loss, on online-standardised features) restricted to the current selection of
``--selection-stream``; each new version with a different feature set starts a new model on
those features. It exits, printing a summary, once the final result of the selection stream
and the ``close`` of the instance stream have both been read (and the topics are read to
their end); a topic deleted (or deleted and re-created) while it reads ends it with one line,
exit 1.

The two streams must describe the same columns: feature ``j`` of the selection is column ``j``
of the instances. Either follow the selection an instance stream computes on its own instances
(the README's ``s2``, OFS on ``a8a.svm``)::

    python -m streamfs.examples.downstream --selection-stream s2 --instance-stream s2

or the selection of a feature stream of the same data, as the Compose demo does (its feature
stream ``demo-breast-cancer`` and instance stream ``demo-bc-instances`` both stream the breast
cancer set). A selection and an instance stream of different data (the README's ``s1``, breast
cancer, with ``s2``, a8a) are refused (:class:`DownstreamError`, exit 1) where the instance
stream's ``open`` names its columns and the selection names a feature otherwise, where the
selection counts more (or, once final, other) columns than the instances have, or where it
names a column beyond them; without names or counts it cannot tell.

Replaying finished streams from their beginning scores instances with a selection computed
from those same instances' labels, so its "prequential accuracy" on a replay is optimistic,
not an estimate of the accuracy on instances the selection has not seen.

The logic lives in :class:`Downstream`, fed decoded messages, without Kafka:

* **Labels** may be anything (numbers, text): they are coded ``0..K-1`` in order of
  appearance (:class:`LabelCodes`; ``--classes`` or the instance stream's ``params.classes``
  fix the first ones). ``SGDClassifier.partial_fit`` needs every class on its first call, so
  when a block brings a label not seen before, the model is rebuilt with the grown label set
  and warmed up on the replay buffer (below) *before* it predicts that block. While a single
  class has been seen (or the selection is empty), the model predicts the majority class.
* **Replay buffer**: the last ``--replay`` instances (default 10,000) are kept. Instances that
  arrive before any selection are buffered, not lost; a new model (first selection, new
  feature set, new label) learns the buffer first, so it does not start from scratch.
* **Prequential accuracy**: every instance is predicted by the model as it is *before* it
  learns that instance, and counted once. A block is predicted, then learned; while the
  model has learned fewer instances than the block holds, the block is processed in
  sub-blocks no longer than that number (1, 1, 2, 4, ...), so a young model is scored almost
  instance by instance at a logarithmic cost. The very first instance (no model yet) is not
  counted; buffered instances are counted when the first model learns them; instances already
  counted are not counted again when a later model replays them.
* **End**: :attr:`Downstream.finished` once the latest result of the selection stream is
  final and the instance stream is closed. A new ``open`` of the instance stream (a rerun
  under the same id) starts its side afresh; the Kafka loop exits only when also caught up
  with the topics (or ``--grace`` seconds after finishing, if other streams keep them busy).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any, Callable, Iterable

import click
import numpy as np
import scipy.sparse as sp

from streamfs.cli.options import Seconds
from streamfs.client import InvalidRecord, Skipped, read_record

__all__ = ["Downstream", "DownstreamError", "LabelCodes", "RestrictedModel", "follow", "main"]


class DownstreamError(ValueError):
    """The selection does not fit the instances: a feature beyond their width, a feature whose
    name differs from the instances' name of that column, or a selection over another number
    of columns."""


class LabelCodes:
    """Labels of any type coded ``0..K-1`` in order of first appearance.

    >>> codes = LabelCodes(["no"])
    >>> codes.encode(np.array(["yes", "no", "maybe", "yes"])).tolist(), codes.labels
    ([1, 0, 2, 1], ['no', 'yes', 'maybe'])
    """

    def __init__(self, initial: Iterable[Any] = ()) -> None:
        self.labels: list[Any] = []
        self._index: dict[Any, int] = {}
        self.encode(list(initial))

    def __len__(self) -> int:
        return len(self.labels)

    def encode(self, y: Any) -> np.ndarray:
        """Codes of the labels ``y`` (an array, or a list of possibly mixed types)."""
        if not isinstance(y, np.ndarray) or y.dtype == object:
            values = np.ravel(np.asarray(y, dtype=object))
            return np.fromiter((self._code(v) for v in values), dtype=np.int64, count=len(values))
        values = y.ravel()
        if values.size == 0:
            return np.empty(0, dtype=np.int64)
        uniq, inverse = np.unique(values, return_inverse=True)
        first = np.full(len(uniq), values.size)
        np.minimum.at(first, inverse, np.arange(values.size))
        mapping = np.empty(len(uniq), dtype=np.int64)
        for u in np.argsort(first, kind="stable"):  # new labels in order of appearance
            mapping[u] = self._code(uniq[u])
        return mapping[inverse]

    def _code(self, label: Any) -> int:
        label = label.item() if isinstance(label, np.generic) else label
        code = self._index.get(label)
        if code is None:
            code = self._index[label] = len(self.labels)
            self.labels.append(label)
        return code


def _sgd() -> Any:
    from sklearn.linear_model import SGDClassifier

    return SGDClassifier(loss="log_loss", random_state=0)


class RestrictedModel:
    """A classifier over a fixed list of feature indices and a fixed number of classes.

    Features are standardised online (running mean and variance, updated after each
    prediction); the classifier (by default ``SGDClassifier(loss="log_loss")``, or
    ``make_classifier()``: any object with ``partial_fit(X, y, classes=...)`` and
    ``predict``) is used from two classes and one feature on; below that, the model predicts
    the majority class of what it has learned.
    """

    def __init__(self, features: list[int], n_classes: int,
                 make_classifier: Callable[[], Any] | None = None) -> None:
        self.features = list(features)
        self.n_classes = n_classes
        self.trained = 0
        self.counts = np.zeros(max(n_classes, 1), dtype=np.int64)
        self.classifier = None
        self.scaler = None
        if n_classes >= 2 and self.features:
            from sklearn.preprocessing import StandardScaler

            self.classifier = (make_classifier or _sgd)()
            self.scaler = StandardScaler()

    def _columns(self, X: Any) -> np.ndarray:
        Xs = X[:, self.features]
        return Xs.toarray() if sp.issparse(Xs) else np.asarray(Xs, dtype=np.float64)

    def predict(self, X: Any) -> np.ndarray | None:
        """Class codes, or ``None`` before the model has learned anything."""
        if self.trained == 0:
            return None
        if self.classifier is None:
            return np.full(X.shape[0], int(np.argmax(self.counts)), dtype=np.int64)
        return np.asarray(self.classifier.predict(self.scaler.transform(self._columns(X))))

    def learn(self, X: Any, codes: np.ndarray) -> None:
        self.counts += np.bincount(codes, minlength=self.counts.size)[:self.counts.size]
        if self.classifier is not None:
            Xs = self._columns(X)
            self.scaler.partial_fit(Xs)
            self.classifier.partial_fit(self.scaler.transform(Xs), codes,
                                        classes=np.arange(self.n_classes))
        self.trained += len(codes)


class Downstream:
    """The downstream model's state machine, fed decoded messages (see the module docstring).

    :meth:`handle` takes one decoded message of either topic and returns the lines to print;
    :attr:`finished` says when to stop; :meth:`summary` / :meth:`summary_text` report.
    """

    def __init__(self, selection_stream: str, instance_stream: str, *,
                 classes: Iterable[Any] = (), replay: int = 10_000,
                 make_classifier: Callable[[], Any] | None = None) -> None:
        self.selection_stream = selection_stream
        self.instance_stream = instance_stream
        if isinstance(replay, bool) or not isinstance(replay, (int, np.integer)) or replay < 0:
            raise ValueError(f"replay must be a whole number of instances from 0, got {replay!r}")
        self.replay = int(replay)
        self.make_classifier = make_classifier
        self._initial_classes = list(classes)
        self.selection: dict | None = None  # latest result of the selection stream
        self.final = False
        self._reset_instances()

    def _reset_instances(self) -> None:
        self.labels = LabelCodes(self._initial_classes)
        self.opened = False
        self.closed = False
        self.n_features: int | None = None
        self.feature_names: list[str] | None = None
        self.n_instances = 0
        self.n_blocks = 0
        self.n_scored = 0
        self.n_correct = 0
        self.history: deque[list] = deque()  # [X, codes, scored] blocks, newest last
        self.history_rows = 0
        self.model: RestrictedModel | None = None
        self.model_version: int | None = None  # selection version the model follows

    # --- state --------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """The selection's latest result is final and the instance stream is closed."""
        return self.final and self.closed

    @property
    def accuracy(self) -> float:
        return self.n_correct / self.n_scored if self.n_scored else float("nan")

    def feature_label(self, item: dict) -> str:
        """A selection item's name: its ``name``, else the instance stream's name of that
        column, else ``x{feature}``."""
        if item.get("name") is not None:
            return str(item["name"])
        j = int(item["feature"])
        names = self.feature_names
        if names is not None and 0 <= j < len(names) and names[j] is not None:
            return str(names[j])
        return f"x{j}"

    def selected_names(self) -> list[str]:
        return [self.feature_label(i) for i in (self.selection or {}).get("selection", [])]

    # --- messages -----------------------------------------------------------------------

    def handle(self, message: dict) -> list[str]:
        kind, stream = message.get("kind"), message.get("stream")
        if kind == "result" and stream == self.selection_stream:
            return self._on_result(message)
        if stream != self.instance_stream:
            return []
        if kind == "open":
            return self._on_open(message)
        if kind == "instances":
            return self._on_instances(message)
        if kind == "close":
            self.closed = True
            return [f"instance stream {stream} closed after {self.n_instances} instances"]
        return []

    def _on_open(self, message: dict) -> list[str]:
        lines = []
        if self.opened or self.n_instances:
            lines.append(f"instance stream {self.instance_stream} opened again: starting over")
            self._reset_instances()
        self.opened = True
        self.n_features = message.get("n_features")
        self.feature_names = message.get("feature_names")
        for c in (message.get("params") or {}).get("classes") or []:
            self.labels.encode([c])
        if self.selection is not None:  # a fresh model for the new run
            self._check_selection(self.selection, self.n_features)
            self._start_model()
        return lines

    def _on_result(self, message: dict) -> list[str]:
        if self.selection is not None:
            # a stream's versions rise within a run, and runs rise: one not newer is a
            # republished one (the worker's app id changed and changed back), never newer data
            held = (self.selection.get("run", 1), self.selection.get("version", 0))
            given = (message.get("run", 1), message.get("version", 0))
            if given <= held:
                return [f"selection v{given[1]} of run {given[0]} is not newer than v{held[1]} "
                        f"of run {held[0]}, in use: ignored"]
        # checked before it is taken: a selection of other columns never trains a model
        self._check_selection(message, self.n_features)
        self.selection = message
        self.final = bool(message.get("final"))
        features = [int(item["feature"]) for item in message.get("selection") or []]
        names = ", ".join(self.selected_names()) or "none"
        tag = f"selection v{message.get('version')}{' (final)' if self.final else ''}"
        # the same set in another order (OFS orders its selection by |w|, which moves with
        # every update) is the same model: it keeps its own column order
        if self.model is not None and sorted(features) == sorted(self.model.features):
            self.model_version = message.get("version")
            return [f"{tag}: same {len(features)} features, model kept"]
        self._check_features(features, self.n_features)
        replayed = self._start_model()
        return [f"{tag}: new model on {len(features)} features ({names})"
                + (f", warmed up on {replayed} buffered instances" if replayed else "")]

    def _on_instances(self, message: dict) -> list[str]:
        X = message["X"]
        codes = self.labels.encode(message["y"])
        if X.shape[0] != len(codes):
            raise DownstreamError(f"instances block of {X.shape[0]} rows with {len(codes)} labels")
        self.n_instances += len(codes)
        self.n_blocks += 1
        if self.model is None:
            self._remember(X, codes, scored=False)
            return [f"{self.n_instances} instances buffered (no selection of "
                    f"{self.selection_stream} yet)"]
        self._check_features(self.model.features, X.shape[1])
        if self.n_features is None and self.selection is not None:  # no open read: its width
            self._check_selection(self.selection, X.shape[1])
        if len(self.labels) > self.model.n_classes:  # new label(s): rebuild, then predict
            self._start_model()
        self._prequential(X, codes, score=True)
        self._remember(X, codes, scored=True)
        return [f"{self.n_instances} instances, prequential accuracy {self.accuracy:.3f} "
                f"({self.n_correct}/{self.n_scored}), model on {len(self.model.features)} "
                f"features of selection v{self.model_version}"]

    # --- learning -----------------------------------------------------------------------

    def _check_features(self, features: list[int], width: int | None) -> None:
        if width is not None and features and max(features) >= width:
            raise DownstreamError(
                f"selection of {self.selection_stream} names feature {max(features)}, but "
                f"the instances of {self.instance_stream} have {width} features")

    def _check_selection(self, message: dict, width: int | None) -> None:
        """Refuse a selection that does not describe the instance stream's columns: an item
        whose ``name`` differs from the instance stream's name of that column (its ``open``'s
        ``feature_names``), or a selection computed over another number of columns than the
        instances' ``width`` (an instance stream's result: ``params.n_features``; a feature
        stream's: ``counters.n_features_seen``, which grows to the total by the final result),
        or naming a column beyond them."""
        items = message.get("selection") or []
        self._check_features([int(item["feature"]) for item in items], width)
        advice = (f"follow a selection computed on the same columns as {self.instance_stream}'s "
                  f"(a feature stream of the same data, or {self.instance_stream} itself)")
        seen, exact = self._selection_width(message)
        if width is not None and seen is not None and (seen > width or exact and seen != width):
            raise DownstreamError(
                f"selection v{message.get('version')} of {self.selection_stream} was computed "
                f"on {seen} features, but the instances of {self.instance_stream} have {width}: "
                f"the two streams are not of the same data; {advice}")
        names = self.feature_names
        if names is None:
            return
        for item in items:
            j, name = int(item["feature"]), item.get("name")
            theirs = names[j] if 0 <= j < len(names) else None
            if name is not None and theirs is not None and str(name) != str(theirs):
                raise DownstreamError(
                    f"selection v{message.get('version')} of {self.selection_stream} names "
                    f"feature {j} {name!r}, but column {j} of the instances of "
                    f"{self.instance_stream} is {theirs!r}: the two streams do not describe the "
                    f"same columns; {advice}")

    @staticmethod
    def _selection_width(message: dict) -> tuple[int | None, bool]:
        """``(number of columns, exact)`` the selection was computed on, as its result says:
        an instance stream's ``params.n_features`` (its d: exact), a feature stream's
        ``counters.n_features_seen`` (exact once final; a lower bound before); else None."""
        def whole(value: Any) -> bool:
            return isinstance(value, (int, np.integer)) and not isinstance(value, bool)

        params, counters = message.get("params"), message.get("counters")
        d = params.get("n_features") if isinstance(params, dict) else None
        if whole(d):
            return int(d), True
        seen = counters.get("n_features_seen") if isinstance(counters, dict) else None
        if whole(seen):
            return int(seen), bool(message.get("final"))
        return None, False

    def _start_model(self) -> int:
        """A new model on the current selection and labels, warmed up on the replay buffer
        (its never-scored instances are scored on the way); returns the rows replayed."""
        assert self.selection is not None
        features = [int(item["feature"]) for item in self.selection.get("selection") or []]
        self.model = RestrictedModel(features, len(self.labels), self.make_classifier)
        self.model_version = self.selection.get("version")
        for block in self.history:
            X, codes, scored = block
            self._check_features(features, X.shape[1])
            self._prequential(X, codes, score=not scored)
            block[2] = True
        return self.history_rows

    def _prequential(self, X: Any, codes: np.ndarray, *, score: bool) -> None:
        """Predict then learn, in sub-blocks no longer than what the model has learned."""
        model = self.model
        assert model is not None
        i, n = 0, len(codes)
        while i < n:
            size = min(n - i, max(1, model.trained))
            part = slice(i, i + size)
            if score:
                pred = model.predict(X[part])
                if pred is not None:
                    self.n_scored += size
                    self.n_correct += int(np.count_nonzero(pred == codes[part]))
            model.learn(X[part], codes[part])
            i += size

    def _remember(self, X: Any, codes: np.ndarray, *, scored: bool) -> None:
        if self.replay == 0:
            return
        if len(codes) > self.replay:
            X, codes = X[-self.replay:], codes[-self.replay:]
        self.history.append([X, codes, scored])
        self.history_rows += len(codes)
        while self.history_rows > self.replay:
            oldest = self.history[0]
            extra = self.history_rows - self.replay
            if extra >= len(oldest[1]):
                self.history.popleft()
                self.history_rows -= len(oldest[1])
            else:
                oldest[0], oldest[1] = oldest[0][extra:], oldest[1][extra:]
                self.history_rows -= extra

    # --- report -------------------------------------------------------------------------

    def summary(self) -> dict:
        sel = self.selection or {}
        return {
            "instance_stream": self.instance_stream,
            "selection_stream": self.selection_stream,
            "instances": self.n_instances,
            "trained_on": self.model.trained if self.model is not None else 0,
            "scored": self.n_scored,
            "correct": self.n_correct,
            "prequential_accuracy": self.accuracy,
            "selection_version": self.model_version,
            "final": self.final,
            "features": [int(i["feature"]) for i in sel.get("selection") or []],
            "feature_names": self.selected_names(),
            "labels": list(self.labels.labels),
            "finished": self.finished,
        }

    def summary_text(self) -> str:
        s = self.summary()
        acc = ("n/a" if not s["scored"] else f"{s['prequential_accuracy']:.3f}")
        version = ("no selection" if s["selection_version"] is None else
                   f"selection v{s['selection_version']}{' (final)' if s['final'] else ''}")
        return (f"summary: {s['instances']} instances of {s['instance_stream']}, model trained "
                f"on {s['trained_on']}; prequential accuracy {acc} over {s['scored']} "
                f"predicted instances; {version} of {s['selection_stream']}: "
                f"{len(s['features'])} features: {', '.join(s['feature_names']) or 'none'}; "
                f"labels {s['labels']}")


# --- Kafka ------------------------------------------------------------------------------------

def follow(downstream: Downstream, consumer: Any, n_partitions: int, *,
           echo: Callable[[str], None] = click.echo, timeout: float | None = None,
           max_blocks: int | None = None, grace: float = 10.0,
           skipped: Skipped | None = None, check: Callable[[], None] | None = None,
           kafka_config: dict[str, Any] | None = None) -> str:
    """Poll ``consumer`` (assigned ``n_partitions`` partitions from their beginning, with
    ``enable.partition.eof``) into ``downstream`` until it has finished and every partition
    has been read to its end, or ``grace`` seconds after it finished (``"finished"``), or
    ``max_blocks`` instance blocks were read (``"max-blocks"``), or ``timeout`` seconds
    passed reading (``"timeout"``): as the client's readers count it, the time ``downstream``
    takes to handle what was read (training the model) and ``echo`` are not counted, so a long
    block does not time out a stream whose end is the next record. Records the readers cannot
    use are skipped as the client skips them, counted in ``skipped``. ``check`` is called at
    every turn: a :class:`~streamfs.client.TopicCheck`, which raises ``TopicDeleted`` for a
    topic deleted (or re-created) meanwhile, that the consumer's polls would never tell. An ACL
    that denies the reads raises :class:`~streamfs.broker.AccessDenied`, naming the user of
    ``kafka_config``. A ``timeout`` not above 0 or a ``max_blocks`` below 1 is refused
    (``ValueError``)."""
    from streamfs.broker import AccessDenied
    from streamfs.client import at_partition_end

    if timeout is not None and (isinstance(timeout, bool)
                                or not isinstance(timeout, (int, float))
                                or not timeout > 0):  # NaN is not > 0 either
        raise ValueError(f"timeout must be a number of seconds above 0 (or None), got {timeout!r}")
    if max_blocks is not None and (isinstance(max_blocks, bool) or not isinstance(max_blocks, int)
                                   or max_blocks < 1):
        raise ValueError(f"max_blocks must be a whole number from 1 (or None), got {max_blocks!r}")
    kafka_config = kafka_config or {}
    skipped = Skipped() if skipped is None else skipped

    at_end: set[tuple[str, int]] = set()
    finished_at: float | None = None
    # the reader's own time, as the client's readers count it: the model's (a block of 5,000
    # instances took 3.5 s to learn) moves the deadline on, or a close that is the next
    # record could time out
    spent, mark = 0.0, time.monotonic()
    while True:
        now = time.monotonic()
        spent, mark = spent + now - mark, now
        if downstream.finished:
            finished_at = finished_at or now
            if len(at_end) >= n_partitions or now - finished_at >= grace:
                return "finished"
        else:
            finished_at = None
        if max_blocks is not None and downstream.n_blocks >= max_blocks:
            return "max-blocks"
        if timeout is not None and spent > timeout:
            echo(f"timed out after {timeout} s of reading (the model's own time not counted) "
                 f"before the final result of {downstream.selection_stream} and the close of "
                 f"{downstream.instance_stream} were both read: check that both streams exist "
                 f"and a worker runs, or give a longer --timeout")
            return "timeout"
        if check is not None:
            check()
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            try:
                ended = at_partition_end(msg, kafka_config, msg.topic())
            except AccessDenied:
                raise  # one line and exit 77 (_Command)
            except RuntimeError:
                raise click.ClickException(f"consumer error: {msg.error()}") from None
            if ended:
                at_end.add((msg.topic(), msg.partition()))
            continue
        at_end.discard((msg.topic(), msg.partition()))
        if msg.value() is None:
            continue
        try:
            # the selections, and the instance stream's input it predicts
            body = read_record(msg.value(), ("result", "open", "instances", "close"))
        except InvalidRecord as problem:  # logged once per kind, counted
            skipped(problem, msg.topic(), msg.partition(), msg.offset())
            continue
        spent += time.monotonic() - mark
        for line in downstream.handle(body):
            echo(line)
        mark = time.monotonic()


class _Command(click.Command):
    """Credentials, TLS or ACLs that Kafka refuses, wherever met: one line and exit 77, as
    the streamfs commands say it."""

    def invoke(self, ctx: click.Context) -> Any:
        from streamfs.broker import EXIT_DENIED, AccessDenied

        try:
            return super().invoke(ctx)
        except AccessDenied as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(EXIT_DENIED)


@click.command(cls=_Command, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--selection-stream", required=True, help="Stream whose selection to follow.")
@click.option("--instance-stream", required=True, help="Instance stream to train on.")
@click.option("--classes", default=None,
              help="Comma-separated labels known up front (others are learned from the "
                   "stream as they appear).")
@click.option("--max-blocks", type=click.IntRange(min=1), default=None,
              help="Stop after this many instance blocks (>= 1).")
@click.option("--timeout", type=Seconds(min=0, min_open=True), default=None,
              help="Give up after this many seconds of reading (> 0; exit code 1). Time spent "
                   "training the model on what was read is not counted, as `streamfs watch` "
                   "does not count its own.")
@click.option("--replay", type=click.IntRange(min=0), default=10_000, show_default=True,
              help="Recent instances kept to warm up a new model (0: none).")
@click.option("--grace", type=Seconds(min=0), default=10.0, show_default=True,
              help="Seconds to wait, once finished, for the topics' ends to be reached.")
def main(selection_stream: str, instance_stream: str, classes: str | None,
         max_blocks: int | None, timeout: float | None, replay: int, grace: float) -> None:
    """Train an online classifier on an instance stream, restricted to the features another
    stream's selection currently holds, and print its prequential accuracy.

    Reads the selected-features and instances topics of STREAMFS_TOPIC_PREFIX on
    STREAMFS_BOOTSTRAP_SERVERS from their beginning (read_committed); exits once the
    selection's final result and the instance stream's close are read.
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

    import signal

    from streamfs.broker import (EXIT_UNREACHABLE, BrokerUnreachable, check_reachable,
                                 interrupting_signal, make_client, remember_interrupts)
    from streamfs.client import TopicCheck, TopicMissing, check_topic_access, reader_config
    from streamfs.settings import Settings
    from streamfs.topics import load_catalogue, missing_topic_message

    # SIGTERM (`docker compose stop`, systemd) ends it as Ctrl-C does: its summary, 128 + 15
    remember_interrupts(signal.SIGTERM)
    # librdkafka's lines (one per failed connection) are for --verbose in the streamfs
    # commands; here the error below says what matters
    logging.getLogger("streamfs.kafka").setLevel(logging.CRITICAL)
    try:  # a setting, the catalogue or the broker: one line, as the streamfs commands say it
        settings = Settings.from_env()
        topics = load_catalogue(settings.topic_prefix)
        names = [topics["selected"].name, topics["instances"].name]
        check_reachable(settings.kafka_config())
    except ValueError as exc:  # a STREAMFS_* setting, or CatalogueError
        raise click.UsageError(str(exc)) from None
    except BrokerUnreachable as exc:
        click.echo(f"Error: {exc}", err=True)
        raise SystemExit(EXIT_UNREACHABLE) from None
    initial = [int(c) if c.strip().lstrip("-").isdigit() else c.strip()
               for c in classes.split(",")] if classes else []
    downstream = Downstream(selection_stream, instance_stream, classes=initial, replay=replay)
    # the project's readers' settings: read_committed, partition ends reported and soon known
    consumer = make_client(Consumer, reader_config(settings.kafka_config()))
    # the topics' ids as reading starts: one deleted or made again since ends the loop
    check = TopicCheck(settings.kafka_config(), names)
    check.start()
    try:
        # assigned (not subscribed) from the beginning: every record produced before this
        # process started is read, and no group rebalance delays the first fetch
        parts = []
        for name in names:
            try:
                meta = consumer.list_topics(name, timeout=30).topics.get(name)
            except KafkaException as exc:  # the broker went away since the check
                raise click.ClickException(f"cannot read the topics: {exc.args[0].str()}")
            check_topic_access(meta, settings.kafka_config(), name)
            if meta is None or meta.error is not None or not meta.partitions:
                raise click.ClickException(missing_topic_message(name))
            parts += [TopicPartition(name, p, OFFSET_BEGINNING) for p in meta.partitions]
        consumer.assign(parts)
        try:
            check.wait(30)
            status = follow(downstream, consumer, len(parts), timeout=timeout,
                            max_blocks=max_blocks, grace=grace, check=check,
                            kafka_config=settings.kafka_config())
        except (DownstreamError, TopicMissing) as exc:  # TopicMissing: a topic deleted since
            raise click.ClickException(str(exc)) from None
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: what was learnt so far, 128 + signal
            click.echo(downstream.summary_text())
            raise SystemExit(128 + interrupting_signal()) from None
    finally:
        consumer.close()
    click.echo(downstream.summary_text())
    if status == "timeout":
        raise SystemExit(1)


if __name__ == "__main__":
    main()
