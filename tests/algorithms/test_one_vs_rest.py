"""Tests of the one-vs-rest wrapper of the binary instance-stream learners."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from streamfs.algorithms.ofs import OFS, OFSPartial
from streamfs.algorithms.one_vs_rest import OneVsRest


def test_one_vs_rest_matches_binary_learners_and_round_trips():
    from streamfs.algorithms.one_vs_rest import OneVsRest

    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 12))
    y = np.array(["x", "y", "z"])[np.argmax(X[:, :3], axis=1)]
    ovr = OneVsRest(OFS(3), classes=["x", "y", "z"]).partial_fit(X[:150], y[:150])
    ovr = OneVsRest.from_state(ovr.to_state())
    for x, t in zip(X[150:], y[150:]):
        ovr.learn_one(x, t)
    for c, m in zip(ovr.classes_, ovr.learners_):
        ref = OFS(3, classes=[False, True]).partial_fit(X, y == c)
        np.testing.assert_array_equal(m.coef_, ref.coef_)
    assert (ovr.predict(X[200:]) == y[200:]).mean() > 0.7
    sel = ovr.selection()
    assert {s["feature"] for s in sel} >= {0, 1, 2}
    assert [abs(s["score"]) for s in sel] == sorted((abs(s["score"]) for s in sel), reverse=True)
    with pytest.raises(ValueError, match="full-input"):
        OneVsRest(OFSPartial(2)).partial_fit(X, y)
    with pytest.raises(ValueError, match="^Mix of label input types"):
        OneVsRest(OFS(3)).partial_fit(X[:4], np.array(["x", 1, "y", 2], dtype=object))
    with pytest.raises(ValueError, match="^Mix of label input types"):
        ovr.partial_fit(X[:2], np.array([1, 2]))


def test_one_vs_rest_is_a_scikit_learn_classifier_and_selector():
    from sklearn.base import clone, is_classifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from streamfs.algorithms.one_vs_rest import OneVsRest

    rng = np.random.default_rng(9)
    X = rng.normal(size=(300, 8))
    y = np.array(["z", "y", "x"])[np.argmax(X[:, :3], axis=1)]  # "z" comes first
    frame = pd.DataFrame(X, columns=[f"g{j}" for j in range(8)])
    m = OneVsRest(OFS(2)).fit(frame, y)
    assert is_classifier(m) and m.classes_.tolist() == ["x", "y", "z"]  # sorted
    assert m.n_features_in_ == 8 and m.feature_names_in_.tolist() == list(frame.columns)
    support = np.zeros(8, dtype=bool)
    for learner in m.learners_:
        support[learner.selected_] = True
    np.testing.assert_array_equal(m.get_support(), support)
    assert m.get_feature_names_out().tolist() == [f"g{j}" for j in np.flatnonzero(support)]
    # every selector's selection is selected_ (the README), here in selection()'s order
    assert m.selected_.tolist() == [s["feature"] for s in m.selection()]
    assert sorted(m.selected_.tolist()) == np.flatnonzero(support).tolist()
    assert OneVsRest(OFS(2)).selected_.tolist() == []
    assert OneVsRest(OFS(2)).mistakes_ == OFS(2).mistakes_ == 0  # (an AttributeError was)
    assert m.transform(frame).shape == (300, support.sum())
    assert m.decision_function(frame).shape == (300, 3) and m.score(frame, y) > 0.6
    # two classes: scikit-learn's single column, positive for classes_[1]
    yb = np.where(X[:, 0] > 0, "b", "a")
    two = OneVsRest(OFS(3)).fit(X, yb)
    d = two.decision_function(X)
    assert d.shape == (300,)
    np.testing.assert_array_equal(two.predict(X), np.where(d > 0, "b", "a"))
    # clone: same parameters, no learners; in a pipeline
    assert not hasattr(clone(m), "learners_")
    pipe = make_pipeline(OneVsRest(OFS(3)), LogisticRegression()).fit(X, y)
    assert pipe.score(X, y) > 0.6
    with pytest.raises(ValueError, match="at least two classes"):
        OneVsRest(OFS(2)).fit(X, np.zeros(300))


def test_one_vs_rest_state_of_first_seen_order_restores_sorted():
    from streamfs.algorithms.one_vs_rest import OneVsRest

    rng = np.random.default_rng(10)
    X = rng.normal(size=(120, 5))
    y = np.array(["z", "y", "x"])[np.argmax(X[:, :3], axis=1)]
    m = OneVsRest(OFS(2)).partial_fit(X, y)
    state = m.to_state()
    # a state written when classes_ kept first-seen order
    order = [state["classes_"].index(c) for c in ("z", "x", "y")]
    old = {**state, "classes_": [state["classes_"][i] for i in order],
           "learners": [state["learners"][i] for i in order]}
    back = OneVsRest.from_state(old)
    assert back.classes_.tolist() == ["x", "y", "z"]
    np.testing.assert_array_equal(back.decision_function(X), m.decision_function(X))


def test_one_vs_rest_partial_fit_refuses_rows_and_labels_of_other_lengths():
    """With one label less the last row was dropped silently; with one more a learner refused
    a piece of the block ("X has 47 rows but y has 48 labels") after others had learned."""
    from sklearn.datasets import load_wine

    from streamfs.algorithms.one_vs_rest import OneVsRest

    X, y = load_wine(return_X_y=True)
    for rows, labels in ((X, y[:-1]), (X[:-1], y), (X.tolist(), y[:-1])):
        m = OneVsRest(OFS(3))
        with pytest.raises(ValueError, match=rf"^X has {len(rows)} rows but y has "
                                             rf"{len(labels)} labels$"):
            m.partial_fit(rows, labels)
        assert not getattr(m, "learners_", [])  # nothing learned


def test_a_pickle_written_when_one_vs_rest_lived_in_ofs_still_loads():
    """Pickles name a class by module: those written before OneVsRest moved to its own module
    name it streamfs.algorithms.ofs.OneVsRest."""
    import io
    import pickle

    from streamfs.algorithms.one_vs_rest import OneVsRest

    m = OneVsRest(OFS(2)).partial_fit(np.eye(3).repeat(4, axis=0), np.arange(12) // 4)
    new = pickle.dumps(m, protocol=0)  # text opcodes: the module path can be rewritten
    old = new.replace(b"streamfs.algorithms.one_vs_rest\nOneVsRest",
                      b"streamfs.algorithms.ofs\nOneVsRest")
    assert old != new
    back = pickle.load(io.BytesIO(old))
    assert type(back) is OneVsRest
    np.testing.assert_array_equal(back.decision_function(np.eye(3)), m.decision_function(np.eye(3)))


def test_fit_opens_every_class_at_the_first_row_whatever_their_order():
    """fit sees every label: the learner of a class that first comes late learned only from
    there (iris sorted by class: the class-2 learner saw positives only), so fit depended on
    the order the classes first appear in. Each learner now equals a binary learner of y == c
    over all the rows."""
    from sklearn.datasets import load_iris

    from streamfs.algorithms.one_vs_rest import OneVsRest

    X, y = load_iris(return_X_y=True)
    ovr = OneVsRest(OFS(2)).fit(X, y)
    for c, m in zip(ovr.classes_, ovr.learners_):
        ref = OFS(2, classes=[False, True]).fit(X, y == c)
        np.testing.assert_array_equal(m.coef_, ref.coef_)
        assert m.mistakes_ == ref.mistakes_
    given = OneVsRest(OFS(2), classes=[0, 1, 2]).fit(X, y)
    assert ovr.get_support(indices=True).tolist() == given.get_support(indices=True).tolist()


def test_a_refused_instance_opens_no_class():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    m = OneVsRest(OFS(n_features_to_select=2)).fit(X, y)
    before = m.predict(X)
    with pytest.raises(ValueError, match="NaN"):
        m.partial_fit(np.array([[np.nan, 1.0, 1.0, 1.0]]), [7])
    with pytest.raises(ValueError, match="not a number"):
        m.learn_one({0: "oops"}, 9)
    assert m.classes_.tolist() == [0, 1, 2]
    np.testing.assert_array_equal(m.predict(X), before)
    fresh = OneVsRest(OFS(n_features_to_select=2, n_features=4))
    with pytest.raises(ValueError, match="not a number"):
        fresh.learn_one({0: "bad"}, "b")
    assert fresh.predict_one({0: 1.0}) is None


def test_a_bad_row_late_in_a_block_is_refused_before_any_learner_learns():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    bad = X.copy()
    bad[120, 0] = np.nan  # after every class has opened
    m = OneVsRest(OFS(n_features_to_select=2))
    with pytest.raises(ValueError, match="NaN"):
        m.partial_fit(bad, y)
    assert not hasattr(m, "learners_")
    m.partial_fit(X, y)
    ref = OneVsRest(OFS(n_features_to_select=2)).partial_fit(X, y)
    np.testing.assert_array_equal(m.predict(X), ref.predict(X))
