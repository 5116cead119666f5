"""Evaluation protocols of the SAOLA, K-OFSD, OFS and GDM papers.

* **Split protocols** (:func:`make_splits`): one fixed stratified train/test split
  (``"holdout"``), repeated stratified random splits (``"repeated"``) or stratified k-fold
  (``"kfold"``). On each split the selector learns on the training part only; 1-NN, a linear
  SVM and a decision tree (:func:`classifiers`) are then trained on the selected columns of
  the training part and scored on the test part (accuracy, AUC, G-mean). Features are
  z-scored with training statistics before 1-NN and the SVM (the tree does not care).
  An empty selection predicts the training majority class (AUC 0.5).
* **Batch baselines**: ``SelectKBest`` with ``f_classif`` and ``mutual_info_classif`` at the
  same ``k`` as the selector on that split (skipped when the selector chose nothing).
* **Stability** (:func:`stability_runs`): the selector runs on ``n_runs`` random 4/5
  subsamples; :func:`streamfs.evaluation.metrics.selection_stability` compares them.
* **Online mistake rate** (:func:`online_mistakes`, instance-stream learners): one pass over
  ``n_permutations`` random orders of all instances; the cumulative mistake rate is recorded
  at ``n_points`` positions and averaged over permutations.

Labels are encoded as ``0..K-1`` in sorted order (strings allowed). Binary-only learners
(the OFS family, GDM) on multi-class data get a one-vs-rest task (:func:`one_vs_rest`): by
default the largest class (ties: first in sorted order) against all the others, and are then
evaluated on that binary task. K-OFSD on multi-class data gets the smallest class against the
rest (the class-imbalanced task it is designed for).

Every loop honours a ``time_budget`` in seconds: no new split or run starts once the budget
is spent, but at least one split (two stability runs) always completes; the number done is
reported. Every loop also takes an optional ``tick`` callable, called after each split, run
or order (for progress displays).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np
import scipy.sparse as sp

from streamfs.algorithms.registry import LabelError

from . import metrics

__all__ = [
    "Algorithm",
    "encode_labels",
    "one_vs_rest",
    "is_discrete",
    "prepare_X",
    "make_splits",
    "classifiers",
    "score_selection",
    "evaluate_splits",
    "stability_runs",
    "online_mistakes",
    "selection_trace",
    "accuracy_curve",
]

BINARY_ONLY_KINDS = ("instances", "batch")
# K-OFSD is built for a small class against the rest: on multi-class data it is evaluated as
# the smallest class versus the rest, as in Zhou et al.'s experiments
MINORITY_VS_REST = ("kofsd",)


@dataclass
class Algorithm:
    """A selector name (registry name or ``"gdm"``) with its constructor parameters."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    #: group-saola's groups: lists of column indices partitioning the columns
    groups: list[list[int]] | None = None

    @property
    def kind(self) -> str:
        """``"features"``, ``"instances"`` or ``"batch"`` (GDM)."""
        if self.name == "gdm":
            return "batch"
        from streamfs.algorithms import registry

        return registry.get(self.name).kind

    def build(self) -> Any:
        if self.name == "gdm":
            from streamfs.algorithms.gdm import GDM

            try:
                return GDM(**self.params)
            except TypeError as exc:
                raise ValueError(f"bad parameters for 'gdm': {exc}") from None
        from streamfs.algorithms import registry

        params = dict(self.params)
        if self.kind == "instances":
            params.setdefault("classes", [0, 1])  # labels arrive encoded as 0/1
        return registry.get(self.name).build(params)

    def select(self, X: Any, y: np.ndarray, seed: int = 0) -> tuple[np.ndarray, float]:
        """Run the selector on ``(X, y)`` and return ``(selected features, seconds)``.
        Instance-stream learners make one pass in a random order drawn from ``seed``."""
        model = self.build()
        start = time.perf_counter()
        if self.kind == "instances":
            order = np.random.default_rng(seed).permutation(X.shape[0])
            model.partial_fit(X[order], y[order])
            features = model.selected_
        elif self.kind == "batch":
            features = model.fit(X, y).support_
        elif self.groups is not None:
            features = model.fit(X, y, groups=self.groups).selected_
        else:
            features = model.fit(X, y).selected_
        return np.asarray(features, dtype=np.int64), time.perf_counter() - start


def warm_up(algorithm: Algorithm, X: Any, y: np.ndarray) -> None:
    """Run ``algorithm`` once, untimed, on a small part of ``(X, y)`` (50 columns of a feature
    stream, 200 instances of an instance stream): loading (or compiling) its numba kernels
    took the first timed run 0.37 s where the next took 0.002 s, and under a time budget the
    number of splits run depended on whether numba's cache was warm. A part the algorithm
    refuses (a single class, say) is no error here: the timed runs report their own."""
    import warnings

    part = (X[:200], y[:200]) if algorithm.kind == "instances" else (X[:, :50], y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            algorithm.select(*part)
        except ValueError:
            pass


def encode_labels(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes 0..K-1, classes)`` with classes in sorted order.

    >>> encode_labels(np.array(["t", "n", "t"]))[0].tolist()
    [1, 0, 1]
    """
    classes, codes = np.unique(np.asarray(y), return_inverse=True)
    return codes.astype(np.int64), classes


def one_vs_rest(
    codes: np.ndarray, classes: np.ndarray, label: Any = None, smallest: bool = False
) -> tuple[np.ndarray, Any]:
    """Binary codes (1 = ``label``, 0 = the rest) and the label used; default: the largest
    class (``smallest=True``: the smallest), ties to the first in sorted order. ``label`` is
    matched against ``classes`` as given or as text (so ``"3"`` finds the class ``3.0``).

    >>> one_vs_rest(np.array([0, 1, 1, 2]), np.array(["a", "b", "c"]))
    (array([0, 1, 1, 0]), 'b')
    >>> one_vs_rest(np.array([0, 1, 1, 2, 2]), np.array(["a", "b", "c"]), smallest=True)
    (array([1, 0, 0, 0, 0]), 'a')
    """
    if label is None:
        counts = np.bincount(codes, minlength=len(classes))
        k = int(np.argmin(counts) if smallest else np.argmax(counts))
    else:
        text = [str(c) for c in classes]
        hits = [i for i, c in enumerate(classes) if c == label or text[i] == str(label)]
        if not hits:
            try:
                hits = [i for i, c in enumerate(classes) if float(c) == float(label)]
            except (TypeError, ValueError):
                hits = []
        if not hits:
            raise LabelError(f"one-vs-rest label {label!r} not among the classes {text}")
        k = hits[0]
    return (codes == k).astype(np.int64), classes[k].item()


def is_discrete(X: Any, max_states: int = 10) -> bool:
    """True if every value is an integer and every column spans fewer than ``max_states``
    values (``max - min < max_states``): the data SAOLA's ``test="mi"`` is meant for.

    >>> is_discrete(np.array([[0, 1], [2, 1]])), is_discrete(np.array([[0.5], [1.0]]))
    (True, False)
    """
    data = X.data if sp.issparse(X) else np.asarray(X)
    if data.size == 0 or not np.all(data == np.round(data)):
        return False
    lo = X.min(axis=0).toarray().ravel() if sp.issparse(X) else data.min(axis=0)
    hi = X.max(axis=0).toarray().ravel() if sp.issparse(X) else data.max(axis=0)
    return bool(np.max(hi - lo) < max_states)


def prepare_X(X: Any) -> Any:
    """float64; CSR if scipy.sparse or if dense with under 10% non-zeros and over 10^6
    cells (dorothea, dexter: keeps 800 x 100000 in memory cheaply)."""
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float64)
    X = np.asarray(X)
    if X.size > 1_000_000 and np.count_nonzero(X) < 0.1 * X.size:
        return sp.csr_matrix(X, dtype=np.float64)
    return np.asarray(X, dtype=np.float64)


def make_splits(
    y: np.ndarray,
    protocol: str = "repeated",
    n_repeats: int = 10,
    test_size: float = 0.3,
    n_folds: int = 10,
    seed: int = 0,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Train/test index pairs, stratified on ``y``. k-fold uses ``min(n_folds, smallest
    class size)`` folds (at least 2) so that every fold sees every class.

    >>> y = np.array([0] * 6 + [1] * 4)
    >>> [len(te) for _, te in make_splits(y, "kfold", n_folds=5)]  # 4 folds: 4 of class 1
    [3, 3, 2, 2]
    """
    from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit

    if protocol == "kfold":
        k = max(2, min(n_folds, int(np.bincount(y).min())))
        yield from StratifiedKFold(k, shuffle=True, random_state=seed).split(np.zeros(len(y)), y)
    elif protocol in ("holdout", "repeated"):
        n = 1 if protocol == "holdout" else n_repeats
        yield from StratifiedShuffleSplit(n, test_size=test_size, random_state=seed).split(
            np.zeros(len(y)), y
        )
    else:
        raise ValueError(f"protocol must be holdout, repeated or kfold, got {protocol!r}")


def classifiers() -> dict[str, Callable[[], Any]]:
    """Factories of the three classifiers of the papers: 1-NN, linear SVM, decision tree."""
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC
    from sklearn.tree import DecisionTreeClassifier

    return {
        "1nn": lambda: make_pipeline(StandardScaler(), KNeighborsClassifier(1)),
        "svm": lambda: make_pipeline(StandardScaler(), LinearSVC(C=1.0)),
        "tree": lambda: DecisionTreeClassifier(random_state=0),
    }


def _dense(X: Any) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def _scores(model: Any, X: np.ndarray, n_classes: int) -> np.ndarray:
    """Class scores for AUC: the positive-class score for 2 classes, else ``(n, K)``."""
    if hasattr(model, "decision_function"):
        s = model.decision_function(X)
    else:
        s = model.predict_proba(X)
        s = s[:, 1] if n_classes == 2 and s.shape[1] == 2 else s
    if n_classes > 2 and s.shape[1] != n_classes:  # a class missing from the training part
        full = np.full((s.shape[0], n_classes), min(float(s.min()) - 1.0, 0.0))  # ranks last
        full[:, model.classes_] = s
        s = full
    return s


def score_selection(
    X_train: Any, y_train: np.ndarray, X_test: Any, y_test: np.ndarray,
    features: np.ndarray, n_classes: int,
) -> dict[str, dict[str, float]]:
    """``{classifier: {"accuracy", "auc", "g_mean"}}`` of the three classifiers on the
    ``features`` columns (labels ``0..n_classes-1``)."""
    classes = np.arange(n_classes)
    out = {}
    if len(features) == 0:
        majority = int(np.argmax(np.bincount(y_train, minlength=n_classes)))
        pred = np.full(len(y_test), majority)
        flat = {
            "accuracy": float(np.mean(pred == y_test)),
            "auc": 0.5,
            "g_mean": metrics.g_mean(y_test, pred),
        }
        return {name: dict(flat) for name in classifiers()}
    A = _dense(X_train[:, features])
    B = _dense(X_test[:, features])
    for name, make in classifiers().items():
        model = make().fit(A, y_train)
        pred = model.predict(B)
        out[name] = {
            "accuracy": float(np.mean(pred == y_test)),
            "auc": metrics.auc(y_test, _scores(model, B, n_classes), classes),
            "g_mean": metrics.g_mean(y_test, pred),
        }
    return out


def _kbest(
    X: Any, y: np.ndarray, k: int, score: str, discrete: bool, seed: int,
    cache: dict | None = None, mi_bins: int | None = None,
) -> np.ndarray:
    """Top-``k`` features of ``SelectKBest`` with ``f_classif`` (``score="f"``) or
    ``mutual_info_classif`` (``"mi"``; discrete mode for discrete or sparse data, and for
    continuous data cut into ``mi_bins`` equal-frequency bins if given: much faster than the
    default k-NN estimator on thousands of features). The ranking does not depend on ``k``:
    it is computed once per (data, labels) in ``cache``."""
    from sklearn.feature_selection import SelectKBest, f_classif, mutual_info_classif

    key = (score, mi_bins, X.shape, hash(y.tobytes()), hash(np.asarray(X.sum(axis=1)).tobytes()))
    if cache is None or key not in cache:
        if score == "f":
            func = f_classif
        else:
            def func(A, b):
                if mi_bins and not (discrete or sp.issparse(A)):
                    return mutual_info_classif(metrics.discretize(A, mi_bins), b,
                                               discrete_features=True, random_state=seed)
                return mutual_info_classif(A, b, discrete_features=discrete or sp.issparse(A),
                                           random_state=seed)
        with np.errstate(divide="ignore", invalid="ignore"):
            scores = SelectKBest(func, k="all").fit(X, y).scores_
        order = np.argsort(-np.nan_to_num(scores, nan=-np.inf), kind="stable")
        if cache is None:
            return order[:k]
        cache[key] = order
    return cache[key][:k]


def _summary(values: list[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=np.float64)
    return {"mean": float(np.nanmean(a)), "std": float(np.nanstd(a))} if a.size else {}


def _aggregate(per_split: list[dict]) -> dict:
    """Mean and std over splits of the nested ``{clf: {metric: v}}`` dicts."""
    out: dict = {}
    for clf in per_split[0]:
        out[clf] = {m: _summary([s[clf][m] for s in per_split]) for m in per_split[0][clf]}
    return out


def evaluate_splits(
    algorithm: Algorithm,
    X: Any,
    y: np.ndarray,
    splits: list[tuple[np.ndarray, np.ndarray]],
    *,
    baselines: bool = True,
    discrete: bool = False,
    time_budget: float = float("inf"),
    seed: int = 0,
    cache: dict | None = None,
    mi_bins: int | None = None,
    tick: Callable[[], None] | None = None,
) -> dict:
    """Run ``algorithm`` on every split (within ``time_budget``) and aggregate.

    Returns ``n_splits``, ``n_selected``, ``selection_time`` (seconds), ``redundancy``
    (RED on the training part), ``classifiers`` and, if asked, ``baselines``
    (``{"kbest_f": ..., "kbest_mi": ...}``), each as ``{"mean", "std"}`` summaries, plus
    ``selections`` (the selected indices of each split). Pass the same ``cache`` dict for
    several algorithms on the same splits to rank the baselines' features only once.
    """
    n_classes = int(y.max()) + 1
    if splits:
        warm_up(algorithm, X[splits[0][0]], y[splits[0][0]])
    start = time.perf_counter()
    rows: dict[str, list] = {"n": [], "t": [], "red": [], "clf": [], "f": [], "mi": [], "sel": []}
    for i, (tr, te) in enumerate(splits):
        if i and time.perf_counter() - start > time_budget:
            break
        Xtr, Xte = X[tr], X[te]
        features, seconds = algorithm.select(Xtr, y[tr], seed=seed + i)
        rows["sel"].append(features.tolist())
        rows["n"].append(len(features))
        rows["t"].append(seconds)
        rows["red"].append(metrics.redundancy_rate(Xtr, features))
        rows["clf"].append(score_selection(Xtr, y[tr], Xte, y[te], features, n_classes))
        if baselines:
            # on the same splits as the algorithm: the k best of none is the same
            # majority-class prediction as an empty selection (averaging the baselines over
            # the splits with a selection only set them against other splits' scores)
            for key, score in (("f", "f"), ("mi", "mi")):
                kb = (_kbest(Xtr, y[tr], len(features), score, discrete, seed, cache, mi_bins)
                      if len(features) else features)
                rows[key].append(score_selection(Xtr, y[tr], Xte, y[te], kb, n_classes))
        if tick is not None:
            tick()
    result = {
        "n_splits": len(rows["n"]),
        "n_selected": _summary(rows["n"]),
        "selection_time": _summary(rows["t"]),
        "redundancy": _summary(rows["red"]),
        "classifiers": _aggregate(rows["clf"]),
        "selections": rows["sel"],
    }
    if baselines:
        result["baselines"] = {
            "kbest_f": _aggregate(rows["f"]) if rows["f"] else {},
            "kbest_mi": _aggregate(rows["mi"]) if rows["mi"] else {},
        }
    return result


def stability_runs(
    algorithm: Algorithm,
    X: Any,
    y: np.ndarray,
    n_runs: int = 10,
    fraction: float = 0.8,
    weight: str = "su",
    time_budget: float = float("inf"),
    seed: int = 0,
    tick: Callable[[], None] | None = None,
) -> dict:
    """Selections on ``n_runs`` random subsamples of ``fraction`` of the instances (without
    replacement) and their mean pairwise matching similarity (weights on the whole ``X``)."""
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    size = int(round(fraction * n))
    selections = []
    start = time.perf_counter()
    for r in range(n_runs):
        if r >= 2 and time.perf_counter() - start > time_budget:
            break
        idx = np.sort(rng.choice(n, size, replace=False))
        features, _ = algorithm.select(X[idx], y[idx], seed=seed + r)
        selections.append(features.tolist())
        if tick is not None:
            tick()
    return {
        "n_runs": len(selections),
        "weight": weight,
        "stability": metrics.selection_stability(X, selections, weight=weight),
    }


def online_mistakes(
    algorithm: Algorithm,
    X: Any,
    y: np.ndarray,
    n_permutations: int = 20,
    n_points: int = 50,
    time_budget: float = float("inf"),
    seed: int = 0,
    tick: Callable[[], None] | None = None,
) -> dict:
    """Prequential mistake rate of an instance-stream learner over random orders.

    Returns ``mistake_rate`` (final, mean and std over permutations), ``curve`` (``[t,
    mean cumulative mistake rate after t instances]``) and ``size_curve`` (``[t, mean
    number of selected features]``).
    """
    n = X.shape[0]
    cuts = np.unique(np.linspace(0, n, n_points + 1).round().astype(int))[1:]
    rng = np.random.default_rng(seed)
    rates, sizes = [], []
    start = time.perf_counter()
    for p in range(n_permutations):
        if p and time.perf_counter() - start > time_budget:
            break
        order = rng.permutation(n)
        Xp, yp = X[order], y[order]
        model = algorithm.build()
        r, s, prev = [], [], 0
        for c in cuts:
            model.partial_fit(Xp[prev:c], yp[prev:c])
            r.append(model.mistakes_ / c)
            s.append(len(model.selected_))
            prev = c
        rates.append(r)
        sizes.append(s)
        if tick is not None:
            tick()
    R, S = np.asarray(rates), np.asarray(sizes)
    return {
        "n_permutations": len(rates),
        "mistake_rate": {"mean": float(R[:, -1].mean()), "std": float(R[:, -1].std())},
        "curve": [[int(c), float(v)] for c, v in zip(cuts, R.mean(axis=0))],
        "size_curve": [[int(c), float(v)] for c, v in zip(cuts, S.mean(axis=0))],
    }


def selection_trace(algorithm: Algorithm, X: Any, y: np.ndarray, n_points: int = 50) -> list:
    """``[[features seen, selection size], ...]`` of a feature-stream selector fed ``X`` in
    ``n_points`` column blocks (group-saola: blocks of whole groups, in the order listed; the
    instance-stream analogue is ``size_curve``)."""
    Xc = X.tocsc() if sp.issparse(X) else X
    model = algorithm.build()
    groups = algorithm.groups
    lengths = np.ones(X.shape[1], np.int64) if groups is None else np.array([len(g) for g in groups])
    order = None if groups is None else np.concatenate([np.asarray(g, np.int64) for g in groups])
    ends = np.concatenate([[0], np.cumsum(lengths)])  # columns sent before each unit
    cuts = np.unique(np.linspace(0, len(lengths), n_points + 1).round().astype(int))[1:]
    out, prev = [], 0
    for i, c in enumerate(cuts):
        a, b = int(ends[prev]), int(ends[c])
        kwargs = {}
        if groups is not None:  # the block's groups, by position in it
            kwargs["groups"] = [np.arange(ends[u], ends[u + 1]) - a for u in range(prev, c)]
        block = Xc[:, a:b] if order is None else Xc[:, order[a:b]]
        model.partial_fit(block, y if i == 0 else None, **kwargs)
        out.append([b, len(model.selected_)])
        prev = c
    model.finish()
    out[-1][1] = len(model.selected_)
    return out


def accuracy_curve(
    X: Any, y: np.ndarray, split: tuple[np.ndarray, np.ndarray], ks: list[int],
    score: str = "f", discrete: bool = False, cache: dict | None = None,
) -> dict[str, list]:
    """Accuracy of each classifier with the top-``k`` ``SelectKBest`` features, for each
    ``k`` in ``ks`` (one split): ``{classifier: [[k, accuracy], ...]}``."""
    tr, te = split
    n_classes = int(y.max()) + 1
    out: dict[str, list] = {}
    for k in ks:
        kb = _kbest(X[tr], y[tr], k, score, discrete, 0, cache)
        res = score_selection(X[tr], y[tr], X[te], y[te], kb, n_classes)
        for clf, m in res.items():
            out.setdefault(clf, []).append([int(k), m["accuracy"]])
    return out
