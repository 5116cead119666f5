"""River-style dict API of the instance-stream learners: learn_one, predict_one, transform_one.

Rule: dict keys are int feature indices, or names of ``feature_names_in_`` once the learner has
them (fitted / partial_fitted on a data frame with string column names, or restored from such a
state); string keys of a learner without names raise ``ValueError``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from sklearn.exceptions import NotFittedError

from streamfs.algorithms.instance_stream import InstanceStreamSelector
from streamfs.algorithms.ofs import OFS, OFSPartial, PerceptronTruncation, RandomSelection
from streamfs.algorithms.one_vs_rest import OneVsRest
from streamfs.codec import packb, unpackb

NAMES = [f"attr_{i}" for i in range(12)]


def _stream(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, len(NAMES))) * (rng.random((n, len(NAMES))) < 0.5)
    y = np.where(X[:, 2] - X[:, 5] > 0, "pos", "neg")
    return X, y


MAKERS = [
    lambda: OFS(3),
    lambda: PerceptronTruncation(3),
    lambda: RandomSelection(3, random_state=1),
    lambda: OFSPartial(3, random_state=1, normalize="standardize"),
]


@pytest.mark.parametrize("make", MAKERS)
def test_name_keys_equal_index_keys_equal_arrays(make):
    X, y = _stream()
    df = pd.DataFrame(X, columns=NAMES)
    by_name = make().partial_fit(df.iloc[:20], y[:20])  # the frame gives the names
    by_index = make().partial_fit(X[:20], y[:20])
    by_array = make().partial_fit(X[:20], y[:20])
    for x, t in zip(X[20:], y[20:]):
        nz = np.flatnonzero(x)
        by_name.learn_one({NAMES[i]: float(x[i]) for i in nz}, t)
        by_index.learn_one({int(i): float(x[i]) for i in nz}, t)
        by_array.learn_one(x, t)
    np.testing.assert_array_equal(by_name.coef_, by_array.coef_)
    np.testing.assert_array_equal(by_index.coef_, by_array.coef_)
    assert by_name.mistakes_ == by_array.mistakes_
    x = X[7]
    named = {NAMES[i]: float(x[i]) for i in range(len(NAMES))}
    assert by_name.predict_one(named) == by_array.predict_one(x) == by_array.predict(X[7:8])[0]
    mixed = {("attr_0" if i == 0 else i): float(x[i]) for i in range(len(NAMES))}
    assert by_name.predict_one(mixed) == by_array.predict_one(x)


def test_transform_one_keeps_selected_entries_in_input_order():
    X, y = _stream()
    df = pd.DataFrame(X, columns=NAMES)
    m = OFS(3).fit(df, y)
    chosen = set(m.get_feature_names_out().tolist())
    x = {name: float(i + 1) for i, name in enumerate(reversed(NAMES))}
    out = m.transform_one(x)
    assert set(out) == chosen and list(out) == [k for k in x if k in chosen]
    assert all(out[k] == x[k] for k in out)
    by_index = m.transform_one({i: 1.0 for i in range(len(NAMES))})
    assert sorted(by_index) == sorted(m.selected_.tolist())
    assert m.transform_one({}) == {}
    # agrees with the scikit-learn transform on the same row
    row = df.iloc[[4]]
    assert list(m.transform_one(row.iloc[0].to_dict()).values()) == m.transform(row)[0].tolist()
    # a Series (a row of iterrows()) is read by its labels, as learn_one reads it (the README)
    _, series = next(df.iloc[4:].iterrows())
    expected = m.transform_one(row.iloc[0].to_dict())
    assert list(m.transform_one(series).items()) == list(expected.items())


def test_transform_one_before_any_data_is_empty():
    assert OFS(2).transform_one({0: 1.0, "a": 2.0}) == {}
    with pytest.raises(TypeError, match="expects a dict or a pandas Series, got ndarray"):
        OFS(2).transform_one(np.ones(3))


def test_string_keys_need_names():
    X, y = _stream()
    m = OFS(3).partial_fit(X, y)  # arrays: no names
    with pytest.raises(ValueError, match="has no feature names, so dict keys must be int"):
        m.learn_one({"attr_1": 1.0}, "pos")
    with pytest.raises(ValueError, match="has no feature names"):
        m.predict_one({"attr_1": 1.0})
    with pytest.raises(ValueError, match="has no feature names"):
        m.transform_one({"3": 1.0})  # digit strings are names too, never indices
    fresh = OFS(3, n_features=12).learn_one({0: 1.0}, "pos")  # features by position
    with pytest.raises(ValueError, match="has no feature names"):
        fresh.learn_one({"attr_1": 1.0}, "pos")


def test_a_learner_started_on_named_dicts_names_its_features_from_the_keys():
    """River's datasets yield dicts keyed by name: a learner started on them takes the names
    in the order they first come (as a DataFrame's columns would name them)."""
    rows = [({"a": 1.0, "b": 0.5}, 1), ({"b": -1.0, "c": 2.0}, 0), ({"a": 0.3, "d": 1.0}, 1),
            ({"c": 1.0}, 0)] * 5
    m = OFS(2, n_features=5, normalize=False)
    for x, y in rows:
        m.learn_one(x, y)
    # scikit-learn's feature_names_in_ is all strings: it comes once every feature is named
    assert not hasattr(m, "feature_names_in_")
    assert m._partial_names.tolist() == ["a", "b", "c", "d", None]
    # the same stream with positions in that order learns the same weights
    ref = OFS(2, n_features=5, normalize=False)
    for x, y in rows:
        ref.learn_one({"abcd".index(k): v for k, v in x.items()}, y)
    assert m.selected_.tolist() == ref.selected_.tolist()
    assert m.decision_function({"a": 1.0, "c": 1.0}) == ref.decision_function({0: 1.0, 2: 1.0})
    assert m.get_feature_names_out().tolist() == ["abcd"[i] for i in sorted(ref.selected_)]
    # a name not seen yet weighs 0 in a prediction, and is never selected
    assert m.predict_one({"a": 1.0, "new": 9.0}) == m.predict_one({"a": 1.0})
    assert "new" not in m.transform_one({"new": 1.0, **{k: 1.0 for k in "abcd"}})
    back = OFS.from_state(unpackb(packb(m.to_state())))  # the names and the free slot
    assert not hasattr(back, "feature_names_in_")
    assert back._partial_names.tolist() == ["a", "b", "c", "d", None]
    m.learn_one({"e": 1.0}, 1)
    back.learn_one({"e": 1.0}, 1)
    for learner in (m, back):  # all named: scikit-learn's feature_names_in_, names and all
        assert isinstance(learner.feature_names_in_, np.ndarray)
        assert learner.feature_names_in_.dtype == object
        assert learner.feature_names_in_.tolist() == ["a", "b", "c", "d", "e"]
        assert "_partial_names" not in vars(learner)
    with pytest.raises(ValueError, match="unknown feature name 'f'.*5 features, all named"):
        m.learn_one({"f": 1.0}, 1)
    with pytest.raises(ValueError, match="the value of feature 'a' is not a number: None"):
        m.learn_one({"a": None}, 1)
    # text is not a number, even text float() would parse (scikit-learn refuses it in arrays)
    with pytest.raises(ValueError, match="the value of feature 'b' is not a number: '1.5'"):
        m.learn_one({"a": 1.0, "b": "1.5"}, 1)


def test_bad_keys():
    X, y = _stream()
    m = OFS(3).fit(pd.DataFrame(X, columns=NAMES), y)
    with pytest.raises(ValueError, match="unknown feature name 'nope'"):
        m.learn_one({"nope": 1.0}, "pos")
    with pytest.raises(ValueError, match="out of range"):
        m.predict_one({12: 1.0})
    with pytest.raises(ValueError, match="out of range"):
        m.transform_one({-1: 1.0})
    with pytest.raises(ValueError, match="dict keys must be int feature indices or str"):
        m.predict_one({1.0: 1.0})
    with pytest.raises(ValueError, match="dict keys must be int feature indices or str"):
        m.predict_one({True: 1.0})
    with pytest.raises(ValueError, match="appears twice"):
        m.learn_one({"attr_3": 1.0, 3: 2.0}, "pos")
    n = m.n_seen_
    assert m.n_seen_ == n  # refused instances are not learned


def test_dict_api_without_any_frame_uses_indices():
    m = OFS(2, n_features=4, normalize=False)
    assert m.predict_one({}) is None  # nothing learned yet (River's convention)
    for x, t in [({0: 1.0}, "a"), ({1: 1.0}, "b"), ({0: 0.5, 3: 0.1}, "a")]:
        m.learn_one(x, t)
    assert m.predict_one({0: 1.0}) == "a" and m.predict_one({1: 1.0}) == "b"
    assert set(m.transform_one({0: 1.0, 1: 2.0, 2: 3.0})) <= {0, 1, 3}


@pytest.mark.parametrize("make", MAKERS)
def test_predict_one_is_none_before_any_label(make):
    """River's classifiers predict None until they have seen a label (its base Classifier:
    no class to pick); ours made up the class 1, one the stream has perhaps never had. With
    one label seen, that label is the prediction (it was -1 or 1); scikit-learn's predict
    still refuses a learner that has learned nothing."""
    X, y = _stream()
    fresh = make()
    assert fresh.predict_one(X[0]) is None and fresh.predict_one({0: 1.0}) is None
    with pytest.raises(NotFittedError):
        fresh.predict(X[:2])  # predict_one opened nothing
    opened = make().set_params(n_features=len(NAMES))
    assert opened.predict_one({0: 1.0}) is None and opened.predict_one({"attr_1": 1.0}) is None
    one = make().partial_fit(X[:1], ["pos"])
    for x in (X[1], -X[1], {}, {2: 5.0}, {2: -5.0}):
        assert one.predict_one(x) == "pos", x
    assert one.predict(np.vstack([X[1], -X[1]])).tolist() == ["pos", "pos"]
    given = make().set_params(classes=["neg", "pos"])  # the classes are known: a tie, "pos"
    assert given.predict_one(np.zeros(len(NAMES))) == "pos"


def test_predict_of_an_opened_learner_without_labels_is_not_fitted():
    m = OFSPartial(3, n_features=len(NAMES), random_state=1)
    m.attributes_to_observe()  # opens the stream, learns nothing
    with pytest.raises(NotFittedError, match="has learned no label yet"):
        m.predict(np.zeros((1, len(NAMES))))
    assert m.predict_one(np.zeros(len(NAMES))) is None


def test_one_vs_rest_predict_one_is_none_before_any_label():
    m = OneVsRest(OFS(2))
    assert m.predict_one({0: 1.0}) is None  # was AttributeError: no learners yet
    m.learn_one(np.eye(3)[0], "a")
    assert m.predict_one(np.eye(3)[1]) == "a"


def test_one_vs_rest_reads_a_series_by_its_labels():
    # as the learners do (the README): it was read by position, with a scikit-learn warning
    # per learner that X had no feature names
    import warnings

    X, _ = _stream()
    y = np.array(["a", "b", "c"])[np.argmax(X[:, :3], axis=1)]
    df = pd.DataFrame(X, columns=NAMES)
    m = OneVsRest(OFS(3, n_features=len(NAMES)))
    for (_, row), t in zip(df.iterrows(), y):
        m.learn_one(row, t)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i in range(20):
            row = df.iloc[i]
            assert m.predict_one(row[::-1]) == m.predict_one(row) == m.predict_one(row.to_dict())


def test_one_vs_rest_transform_one_keeps_the_union_of_the_supports():
    X, _ = _stream()
    y = np.array(["a", "b", "c"])[np.argmax(X[:, :3], axis=1)]
    df = pd.DataFrame(X, columns=NAMES)
    m = OneVsRest(OFS(2))
    assert m.transform_one({"attr_0": 1.0}) == {}
    m.fit(df, y)
    row = df.iloc[3]
    out = m.transform_one(row[::-1])
    assert list(out) == [k for k in row[::-1].index if k in set(m.get_feature_names_out())]
    assert m.transform_one(dict(enumerate(row))) == {int(j): row.iloc[j] for j in m.selected_}
    with pytest.raises(TypeError, match="expects a dict or a pandas Series"):
        m.transform_one(np.ones(len(NAMES)))


def test_names_survive_state_for_the_dict_api():
    X, y = _stream()
    m = OFS(3).fit(pd.DataFrame(X, columns=NAMES), y)
    back = InstanceStreamSelector.from_state(unpackb(packb(m.to_state())))
    x = {NAMES[i]: float(X[0, i]) for i in range(len(NAMES))}
    assert back.predict_one(x) == m.predict_one(x)
    assert back.transform_one(x) == m.transform_one(x)
    back.learn_one(x, y[0])
    m.learn_one(x, y[0])
    np.testing.assert_array_equal(back.coef_, m.coef_)


def _wine_by_class():
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True, as_frame=True)
    order = np.argsort(y.to_numpy(), kind="stable")  # each class first comes mid-stream
    X = (X - X.mean()) / X.std()
    return X.iloc[order].reset_index(drop=True), y.to_numpy()[order]


def test_one_vs_rest_learners_opened_mid_stream_number_named_features_alike():
    """A learner opened when its class first comes used to name the features afresh, from the
    key order of that instance: the union of the supports (``selected_``, ``get_support``,
    ``get_feature_names_out``) mixed up features of different learners."""
    X, y = _wine_by_class()
    columns = X.columns.tolist()
    rng = np.random.default_rng(0)
    by_name, by_index = OneVsRest(OFS(3, n_features=13)), OneVsRest(OFS(3, n_features=13))
    for i, (row, t) in enumerate(zip(X.to_numpy(), y)):
        keep = [j for j in range(13) if i == 0 or rng.random() < 0.7]  # absent features: 0
        if i % 2:
            keep = keep[::-1]  # the first instance gives the order of the names
        by_name.learn_one({columns[j]: row[j] for j in keep}, int(t))
        by_index.learn_one({j: row[j] for j in keep}, int(t))
    assert by_name.classes_.tolist() == [0, 1, 2]
    for m in by_name.learners_:
        assert m.feature_names_in_.tolist() == columns
    assert by_name.selected_.tolist() == by_index.selected_.tolist()
    assert by_name.get_feature_names_out().tolist() == [columns[j] for j in
                                                        by_index.get_support(indices=True)]


def test_one_vs_rest_new_class_in_dicts_after_a_frame():
    X, y = _wine_by_class()
    m = OneVsRest(OFS(3)).partial_fit(X[y < 2], y[y < 2])
    first = int(np.flatnonzero(y == 2)[0])
    m.learn_one(X.iloc[first].to_dict(), 2)  # was: the dimension is unknown
    new = m.learners_[2]
    assert new.feature_names_in_.tolist() == X.columns.tolist() and new.n_seen_ == 1
    ref = OFS(3, classes=[False, True]).partial_fit(X.iloc[[first]], [True])
    np.testing.assert_array_equal(new.coef_, ref.coef_)


@pytest.mark.parametrize("bad, message", [
    ({"alcohol": 1.0, "ash": 2.0, "hue": 3.0}, r"^x brings 3 new feature names but OFS has 2 "
                                               r"of its n_features=3 features left to name"),
    ({"ash": "high"}, r"the value of feature 'ash' is not a number"),
    ({"ash": float("nan")}, r"NaN"),
    ({1: 1.0, "ash": 2.0}, r"a feature appears twice"),  # ash would be feature 1
])
def test_a_refused_dict_names_no_feature(bad, message):
    """Names were given as the keys were read, before the checks of the instance: a refused
    instance still named its new keys, so a later name found its slot taken."""
    m, clean = OFS(2, n_features=3), OFS(2, n_features=3)
    for learner in (m, clean):
        learner.learn_one({"malic_acid": 1.0}, 1)
    with pytest.raises(ValueError, match=message):
        m.learn_one(bad, 0)
    assert not hasattr(m, "feature_names_in_")
    assert m._partial_names.tolist() == ["malic_acid", None, None]
    for learner in (m, clean):
        learner.learn_one({"proline": 2.0, "malic_acid": -1.0}, 0)
        learner.learn_one({"color": 1.0}, 1)
    assert m.feature_names_in_.tolist() == ["malic_acid", "proline", "color"]
    np.testing.assert_array_equal(m.coef_, clean.coef_)
    assert m.n_seen_ == clean.n_seen_ == 3


@pytest.mark.parametrize("split", [False, True])
def test_a_dict_a_partial_learner_refuses_for_nan_names_no_feature(split):
    """A partial-input learner takes NaN where it does not read, so the check of the values
    it reads comes with learning, after the keys were read: the refused instance had named
    its new keys. ``split``: the attributes drawn first (``attributes_to_observe``)."""
    m, clean = (OFSPartial(3, n_features=3, random_state=0) for _ in range(2))
    for learner in (m, clean):
        for x, label in [({"malic_acid": 1.0}, 1), ({"malic_acid": -1.0}, 0)] * 2:
            learner.learn_one(x, label)  # malic_acid enters the support: it is read
    if split:
        m.attributes_to_observe()
    with pytest.raises(ValueError, match="NaN or infinite"):
        m.learn_one({"malic_acid": float("nan"), "ash": 1.0}, 0)
    assert not hasattr(m, "feature_names_in_")
    assert m._partial_names.tolist() == ["malic_acid", None, None]
    for learner in (m, clean):
        learner.learn_one({"proline": 2.0, "malic_acid": -1.0}, 0)
    assert not hasattr(m, "feature_names_in_")
    assert m._partial_names.tolist() == ["malic_acid", "proline", None]
    np.testing.assert_array_equal(m.coef_, clean.coef_)
    assert m.n_seen_ == clean.n_seen_ == 5


def test_a_partly_named_learner_is_fitted_without_names_to_scikit_learn():
    """A learner started on a named dict and then taught features by position has names for
    some features only. scikit-learn's ``feature_names_in_`` is all strings or absent: it
    held ``None`` for the others, so a DataFrame failed with "Feature names seen at fit time,
    yet now missing: - None" and an array warned of missing names. The learner now has no
    ``feature_names_in_`` until every feature is named, keeps the names privately (dict keys,
    state), and gives them, with ``x<i>`` for the others, in ``get_feature_names_out``."""
    for m in (OFS(3, n_features=3, normalize=False), OneVsRest(OFS(3, n_features=3))):
        m.learn_one({"a": 1.0}, 1).learn_one({2: 5.0}, 0).learn_one({1: 5.0}, 2 if isinstance(
            m, OneVsRest) else 1)
        assert not hasattr(m, "feature_names_in_")
        assert m.get_feature_names_out().tolist() == ["a", "x1", "x2"]
        m.set_output(transform="pandas")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # fitted without names, given none: no warning
            out = m.transform(np.array([[1.0, 2.0, 3.0]]))
        assert out.columns.tolist() == ["a", "x1", "x2"]
        # as scikit-learn takes a DataFrame for an estimator fitted without names: by
        # position, with its warning
        frame = pd.DataFrame({"p": [1.0], "q": [2.0], "r": [3.0]})
        with pytest.warns(UserWarning, match="X has feature names, but .* was fitted without "
                                             "feature names"):
            by_position = m.transform(frame)
        assert by_position.to_numpy().tolist() == [[1.0, 2.0, 3.0]]
        assert m.transform_one({"a": 4.0, 1: 5.0, "new": 6.0}) == {"a": 4.0, 1: 5.0}
    learner = m.learners_[0]
    assert learner._partial_names.tolist() == ["a", None, None]
    # the state keeps the names as it always has (None for the unnamed), so states written
    # before load alike
    state = unpackb(packb(m.to_state()))
    assert state["learners"][0]["feature_names"] == ["a", None, None]
    back = OneVsRest.from_state(state)
    assert not hasattr(back, "feature_names_in_")
    assert back.get_feature_names_out().tolist() == ["a", "x1", "x2"]
    back.learn_one({"b": 1.0, "c": 2.0, "a": 0.5}, 0)  # names the last two
    assert back.feature_names_in_.tolist() == ["a", "b", "c"]
    with pytest.raises(ValueError, match="unknown feature name 'd'"):
        back.learners_[0].learn_one({"d": 1.0}, True)


def _refusal(call):
    with pytest.raises((TypeError, ValueError)) as info:
        call()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("first, label", [
    ([0, 1], True),  # True and 1 would be one class
    ([False, True], 1),
    ([0, 1], np.True_),
    (["a", "b"], 1),
    ([], 0.5),  # continuous
    ([1.0], 1.5),
])
@pytest.mark.parametrize("make", MAKERS[:1] + MAKERS[-1:])
def test_learn_one_and_learn_observed_refuse_the_labels_partial_fit_refuses(make, first, label):
    """learn_one took True after 0 and 1 (one class), continuous labels as classes; refused
    with partial_fit's message for a block of that one label, and nothing learned."""
    X, _ = _stream()
    m, ref = make(), make()
    if first:
        for learner in (m, ref):
            learner.partial_fit(X[:len(first)], first)
    coef, classes = (m.coef_, m.classes_.tolist()) if first else (None, [])
    expected = _refusal(lambda: ref.partial_fit(X[10:11], [label]))
    assert _refusal(lambda: m.learn_one(X[10], label)) == expected
    if not first:  # a refused first instance starts no stream (it would fix the dimension)
        assert not hasattr(m, "n_features_in_")
        m.set_params(n_features=X.shape[1])
    if hasattr(m, "learn_observed"):
        idx = m.attributes_to_observe()
        assert _refusal(lambda: m.learn_observed(idx, X[10, idx], label)) == expected
        np.testing.assert_array_equal(m.attributes_to_observe(), idx)  # still pending
    if first or hasattr(m, "learn_observed"):  # (attributes_to_observe started the stream)
        assert m.n_seen_ == len(first) and m.classes_.tolist() == classes
    if first:
        np.testing.assert_array_equal(m.coef_, coef)


def test_a_label_given_by_classes_is_not_taken_for_a_boolean():
    m = OFS(3, classes=[0, 1])
    with pytest.raises(ValueError, match=r"Mix of label input types \(boolean and number\)"):
        m.learn_one(np.ones(len(NAMES)), True)
    assert m.n_seen_ == 0
    m.learn_one(np.ones(len(NAMES)), np.int64(1))
    assert m.n_seen_ == 1 and m.classes_.tolist() == [0, 1]


@pytest.mark.parametrize("label", [[1], (1, 0), {"a": 1}, np.array([1])],
                         ids=["list", "tuple", "dict", "array"])
@pytest.mark.parametrize("make", MAKERS[:1] + MAKERS[-1:] + [lambda: OneVsRest(OFS(3))])
def test_learn_one_refuses_what_is_not_one_label(make, label):
    """A list [1] was learned as class 1, a dict became a class, a tuple failed in numba with
    the labels changed and the instance counted."""
    X, y = _stream()
    m = make().partial_fit(X[:20], y[:20])
    coef = m.coef_ if not isinstance(m, OneVsRest) else m.learners_[0].coef_
    kind = type(label).__name__
    with pytest.raises(TypeError, match=rf"^y must be one label \(a string, a number or a "
                                        rf"boolean\), got a {kind}: "):
        m.learn_one(X[20], label)
    assert m.classes_.tolist() == ["neg", "pos"]
    learner = m.learners_[0] if isinstance(m, OneVsRest) else m
    assert learner.n_seen_ == 20
    np.testing.assert_array_equal(learner.coef_, coef)
    with pytest.raises(TypeError, match=rf"got a {kind}: "):
        make().learn_one(X[0], label)


@pytest.mark.parametrize("make", MAKERS[:1] + [lambda: OneVsRest(OFS(3))])
def test_one_instance_methods_name_themselves_for_what_is_not_one_instance(make):
    """OneVsRest.predict_one(3.0) failed with numpy's IndexError, OFS.predict_one of a 2-D
    array said "learn_one expects a 1-D array"."""
    X, y = _stream()
    m = make().partial_fit(X[:20], y[:20])
    expected = r"^{} expects one instance \(a dict, a pandas Series, a 1-D array or a sparse " \
               r"row\), got {}$"
    for x, got in [(3.0, r"an array of 0 dimension\(s\)"),
                   (X[:2], r"an array of 2 dimension\(s\)"),
                   (sp.csr_matrix(X[:2]), "a sparse matrix of 2 rows")]:
        with pytest.raises(ValueError, match=expected.format("predict_one", got)):
            m.predict_one(x)
        if not isinstance(m, OneVsRest):  # (its learners' learn_one name themselves)
            with pytest.raises(ValueError, match=expected.format("learn_one", got)):
                m.learn_one(x, "pos")
