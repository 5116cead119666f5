"""Parameters changed after a stream started: refused by the next step, live and restored alike;
fit() starts over with them (streamfs.algorithms._stream_params)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification

from streamfs.algorithms.gdm_stream import GDMStream
from streamfs.algorithms.group_saola import GroupSAOLA
from streamfs.algorithms.kofsd import KOFSD
from streamfs.algorithms.ofs import (
    OFS,
    OFSPartial,
    OFSRandomPartial,
    PerceptronRandomPartial,
    PerceptronTruncation,
    RandomSelection,
)
from streamfs.algorithms.one_vs_rest import OneVsRest
from streamfs.algorithms.saola import SAOLA
from streamfs.codec import packb, unpackb

# (estimator, parameter, value the stream starts with, value set afterwards)
CASES = [
    (SAOLA(alpha=0.01), "alpha", 0.01, 0.4),
    (SAOLA(), "test", "fisher_z", "mi"),
    (GroupSAOLA(), "bound", "min", "max"),
    (KOFSD(k=7), "k", 7, 3),
    (OFS(2), "n_features_to_select", 2, 5),
    (PerceptronTruncation(3), "eta", 1.0, 2.0),
    (RandomSelection(3, random_state=0), "n_features_to_select", 3, 6),
    (OFSPartial(3, random_state=0), "epsilon", 0.2, 0.9),
    (OFSRandomPartial(3, random_state=0), "radius", 10.0, 1.0),
    (PerceptronRandomPartial(3, random_state=0), "eta", 1.0, 0.5),
    (GDMStream(n_features_per_step=3, refit_every=50), "tau", 0.25, 0.5),
]
IDS = [f"{type(c[0]).__name__}-{c[1]}" for c in CASES]


def _data():
    X, y = make_classification(n_samples=240, n_features=20, n_informative=4, n_redundant=2,
                               random_state=0)
    return X, y


def _features(est) -> bool:
    return isinstance(est, (SAOLA, GroupSAOLA, KOFSD))


def _step(est, X, y, part: int):
    """Block ``part`` (0 or 1) of the stream: columns for a feature stream, rows otherwise."""
    if _features(est):
        block = X[:, :10] if part == 0 else X[:, 10:]
        return est.partial_fit(block, y if part == 0 else None)
    rows = slice(0, 120) if part == 0 else slice(120, None)
    return est.partial_fit(X[rows], y[rows])


def _restored(est):
    return type(est).from_state(unpackb(packb(est.to_state())))


def _selection(est):
    return np.asarray(est.selected_).tolist()


@pytest.mark.parametrize("est, name, old, new", CASES, ids=IDS)
def test_a_step_after_a_parameter_changed_is_refused_live_and_restored(est, name, old, new):
    X, y = _data()
    if isinstance(est, SAOLA) and new == "mi":
        X = np.floor(X)  # discrete values for the MI test
    live = _step(clone(est), X, y, 0)
    assert live.get_params()[name] == old
    live.set_params(**{name: new})
    state = unpackb(packb(live.to_state()))
    assert state["params"][name] == new and state["stream_params"][name] == old
    back = type(est).from_state(state)
    assert back.get_params()[name] == new
    message = (rf"^{type(est).__name__}: parameters changed after the stream started: "
               rf"{name} {old!r} -> {new!r}; .*fit\(\) \(or a fresh estimator\) starts over")
    for model in (live, back):
        with pytest.raises(ValueError, match=message):
            _step(model, X, y, 1)
        # the restored copy carries the change on, as the live one does
        assert model.to_state()["stream_params"] == state["stream_params"]
    # set back, both go on exactly as a stream that never changed
    reference = _step(_step(clone(est), X, y, 0), X, y, 1)
    for model in (live, back):
        _step(model.set_params(**{name: old}), X, y, 1)
        assert _selection(model) == _selection(reference)
        assert "stream_params" not in model.to_state()
    # fit() starts over with the current parameters, on the live and the restored copy
    fresh = clone(est).set_params(**{name: new}).fit(X, y)
    for model in (_step(clone(est), X, y, 0).set_params(**{name: new}),
                  _restored(_step(clone(est), X, y, 0).set_params(**{name: new}))):
        model.fit(X, y)
        assert _selection(model) == _selection(fresh)
        assert "stream_params" not in model.to_state()


def test_the_testers_saola_example_continues_alike_or_not_at_all():
    X, y = _data()
    a = SAOLA(alpha=0.01).partial_fit(X[:, :10], y)
    a.set_params(alpha=0.4)
    with pytest.raises(ValueError, match="alpha 0.01 -> 0.4"):
        a.partial_fit(X[:, 10:15])
    b = SAOLA.from_state(a.to_state())
    with pytest.raises(ValueError, match="alpha 0.01 -> 0.4"):
        b.partial_fit(X[:, 10:15])
    # the MI test's target codes were never made: refused, not an AttributeError
    c = SAOLA().partial_fit(X[:, :3], y).set_params(test="mi")
    with pytest.raises(ValueError, match="test 'fisher_z' -> 'mi'"):
        c.partial_fit(X[:, 3:])


def test_the_budget_of_an_instance_learner_stays_and_restored_copies_agree():
    X, y = _data()
    a = OFS(2).partial_fit(X[:100], y[:100]).set_params(eta=5.0, n_features_to_select=5)
    b = OFS.from_state(a.to_state())
    assert a.budget_ == b.budget_ == 2
    for m in (a, b):
        with pytest.raises(ValueError, match=r"eta 0\.2 -> 5\.0, n_features_to_select 2 -> 5"):
            m.partial_fit(X[100:], y[100:])
        with pytest.raises(ValueError, match="n_features_to_select 2 -> 5"):
            m.learn_one(X[100], y[100])
        np.testing.assert_array_equal(m.coef_, a.coef_)  # nothing was learned
    assert OFS(5, eta=5.0).fit(X, y).selected_.tolist() == a.fit(X, y).selected_.tolist()
    assert a.budget_ == 5


def test_every_step_of_the_partial_input_api_checks():
    X, y = _data()
    m = OFSPartial(3, n_features=20, random_state=0)
    idx = m.attributes_to_observe()
    m.set_params(eta=0.9)
    with pytest.raises(ValueError, match="eta 0.2 -> 0.9"):
        m.learn_observed(idx, X[0, idx], y[0])
    with pytest.raises(ValueError, match="eta 0.2 -> 0.9"):
        m.attributes_to_observe()
    r = RandomSelection(3, n_features=20, random_state=0)
    r.attributes_to_observe()
    with pytest.raises(ValueError, match="redraw False -> True"):
        r.set_params(redraw=True).attributes_to_observe()


def test_finish_checks_too():
    X, y = _data()
    k = KOFSD().partial_fit(X[:, :5], y).set_params(compat="zhou")
    with pytest.raises(ValueError, match="compat None -> 'zhou'"):
        k.finish()
    g = GDMStream(n_features_per_step=3).partial_fit(X[:100], y[:100]).set_params(tau=0.5)
    with pytest.raises(ValueError, match="tau 0.25 -> 0.5"):
        g.finish()
    # SAOLA's and group-SAOLA's (the base class's, without end-of-stream rules) finished
    # with the new value shown in their repr, their selection made with the old one
    s = SAOLA().partial_fit(X[:, :5], y).set_params(alpha=0.2)
    with pytest.raises(ValueError, match="alpha 0.01 -> 0.2"):
        s.finish()
    gs = GroupSAOLA().partial_fit(X[:, :4], y, groups=[[0, 1], [2, 3]]).set_params(bound="max")
    with pytest.raises(ValueError, match="bound 'min' -> 'max'"):
        gs.finish()


def test_unchanged_parameters_leave_the_state_as_it_was():
    """No "stream_params" unless something changed; the same values given again (numpy
    scalars, equal lists) are no change; an int budget is not the fraction 1.0."""
    X, y = _data()
    s = SAOLA(alpha=np.float64(0.05)).partial_fit(X[:, :10], y).set_params(alpha=0.05)
    assert "stream_params" not in s.to_state()
    s.partial_fit(X[:, 10:])
    o = OFS(1, classes=[0, 1]).partial_fit(X[:50], y[:50]).set_params(classes=np.array([0, 1]))
    assert "stream_params" not in o.to_state()
    o.partial_fit(X[50:], y[50:])
    o.set_params(n_features_to_select=1.0)
    with pytest.raises(ValueError, match=r"n_features_to_select 1 -> 1\.0"):
        o.partial_fit(X[:5], y[:5])
    # a random generator given as random_state is the same parameter while it is the same object
    g = np.random.default_rng(3)
    r = OFSPartial(3, random_state=g).partial_fit(X[:50], y[:50]).set_params(random_state=g)
    r.partial_fit(X[50:], y[50:])


def test_states_without_stream_params_load_as_before():
    X, y = _data()
    for est in (SAOLA(), KOFSD(), OFS(3), GDMStream(n_features_per_step=3)):
        live = _step(est, X, y, 0)
        state = live.to_state()
        assert "stream_params" not in state
        back = type(est).from_state(state)
        _step(live, X, y, 1)
        _step(back, X, y, 1)
        assert _selection(back) == _selection(live)


def test_one_vs_rest_keeps_its_learners_parameters_and_classes():
    """Every learner, also one opened for a class that comes later, is a clone of the wrapped
    estimator: its parameters (and ``classes``) are the stream's, live and restored."""
    X, y = make_classification(n_samples=150, n_features=10, n_informative=5, n_classes=3,
                               n_clusters_per_class=1, random_state=0)
    head = np.minimum(y[:50], 1)  # the third class comes later
    reference = OneVsRest(OFS(3)).partial_fit(X[:50], head).partial_fit(X[50:], y[50:])
    live = OneVsRest(OFS(3)).partial_fit(X[:50], head)
    live.set_params(estimator__eta=0.5, estimator__n_features_to_select=6)
    state = unpackb(packb(live.to_state()))
    back = OneVsRest.from_state(state)
    message = (r"^OneVsRest: parameters changed after the stream started: estimator__eta 0\.2 "
               r"-> 0\.5, estimator__n_features_to_select 3 -> 6; ")
    for model in (live, back):
        with pytest.raises(ValueError, match=message):
            model.partial_fit(X[50:], y[50:])
        with pytest.raises(ValueError, match=message):
            model.learn_one(X[50], y[50])
        assert [m.eta for m in model.learners_] == [0.2, 0.2]  # nothing opened or learned
    for model in (live, back):
        model.set_params(estimator__eta=0.2, estimator__n_features_to_select=3)
        assert "stream_params" not in model.to_state()
        model.partial_fit(X[50:], y[50:])
        assert [(m.eta, m.budget_) for m in model.learners_] == [(0.2, 3)] * 3
        np.testing.assert_array_equal(model.decision_function(X), reference.decision_function(X))
    live.set_params(classes=[0, 1, 2])
    with pytest.raises(ValueError, match=r"classes None -> \[0, 1, 2\]"):
        live.learn_one(X[0], y[0])
    live.set_params(estimator=PerceptronTruncation(3))
    with pytest.raises(ValueError, match="estimator 'OFS' -> 'PerceptronTruncation'"):
        live.partial_fit(X, y)
    live.fit(X, y)  # starts over with the current parameters
    assert [type(m).__name__ for m in live.learners_] == ["PerceptronTruncation"] * 3
    assert "stream_params" not in live.to_state()
