"""Parameter validation (one ``_validate_params`` per algorithm) and the registry's label check."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streamfs.algorithms import registry
from streamfs.algorithms.gdm import GDM
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
from streamfs.algorithms.saola import SAOLA

NAN = float("nan")
INF = float("inf")

_SAOLA_BAD = [
    ("test", "chi2"), ("test", None), ("test", 1),
    ("alpha", -0.5), ("alpha", 0), ("alpha", 1), ("alpha", 1.5), ("alpha", NAN), ("alpha", INF),
    ("alpha", "abc"), ("alpha", "0.05"), ("alpha", True), ("alpha", None),
    ("delta", -1.0), ("delta", NAN), ("delta", INF), ("delta", "0"), ("delta", False),
    ("bound", "mean"), ("bound", None),
    ("compat", "matlab"), ("compat", 0),
    ("n_bins", 1), ("n_bins", 0), ("n_bins", 2.5), ("n_bins", 4.0), ("n_bins", "10"),
    ("n_bins", True),
]
_OFS_SHARED_BAD = [
    ("n_features_to_select", -3), ("n_features_to_select", 0), ("n_features_to_select", 0.0),
    ("n_features_to_select", 1.5), ("n_features_to_select", NAN), ("n_features_to_select", "5"),
    ("n_features_to_select", True), ("n_features_to_select", -0.5),
    ("n_features", 0), ("n_features", 2.5), ("n_features", "10"), ("n_features", True),
    ("normalize", "max"), ("normalize", 2), ("normalize", "l1"),
    ("classes", [1, 2, 3]), ("classes", [1]), ("classes", [1, 1]), ("classes", 5),
]
_ETA_BAD = [("eta", -1), ("eta", 0), ("eta", NAN), ("eta", INF), ("eta", "abc"), ("eta", None),
            ("eta", True)]
_SEED_BAD = [("random_state", -1), ("random_state", 1.5), ("random_state", "seed"),
             ("random_state", True)]

BAD = {
    SAOLA: _SAOLA_BAD + [("max_features", 0), ("max_features", -1), ("max_features", 2.5),
                         ("max_features", "3"), ("max_features", True)],
    GroupSAOLA: _SAOLA_BAD,
    KOFSD: [
        ("k", 0), ("k", -1), ("k", 2.5), ("k", 3.0), ("k", "7"), ("k", True), ("k", None),
        ("alpha", -0.1), ("alpha", 1.0), ("alpha", NAN), ("alpha", "x"),
        ("card", "nope"), ("card", None),
        ("compat", "lofs"),
        ("gamma", -0.1), ("gamma", 1.5), ("gamma", NAN), ("gamma", "a"),
        ("gamma1", -1.0), ("gamma1", "a"), ("gamma1", NAN),
        ("gamma2", NAN), ("gamma2", INF), ("gamma2", "b"),
    ],
    OFS: _OFS_SHARED_BAD + _ETA_BAD + [
        ("lam", -0.1), ("lam", NAN), ("lam", "x"), ("lam", INF), ("lam", 5.0),
        ("radius", 0), ("radius", -1.0), ("radius", NAN), ("radius", "r"),
    ],
    PerceptronTruncation: _OFS_SHARED_BAD + _ETA_BAD,
    RandomSelection: _OFS_SHARED_BAD + _ETA_BAD + _SEED_BAD + [
        ("redraw", "yes"), ("redraw", 1), ("redraw", None)],
    OFSPartial: [p for p in _OFS_SHARED_BAD if p[0] != "normalize"] + _ETA_BAD + _SEED_BAD + [
        ("normalize", True), ("normalize", "l2"), ("normalize", "max"),
        ("epsilon", 0), ("epsilon", 1.5), ("epsilon", NAN), ("epsilon", "e"),
        ("radius", 0), ("radius", -2.0), ("radius", None)],
    OFSRandomPartial: _ETA_BAD + _SEED_BAD + [("normalize", True), ("radius", 0),
                                              ("n_features_to_select", -3)],
    PerceptronRandomPartial: _ETA_BAD + _SEED_BAD + [("normalize", "l2"),
                                                     ("n_features_to_select", 0)],
    GDM: [
        ("n_features_per_step", 0), ("n_features_per_step", 2.5), ("n_features_per_step", "3"),
        ("tau", 0), ("tau", 1), ("tau", NAN), ("tau", "t"),
        ("C", 0), ("C", -1.0), ("C", NAN), ("C", INF), ("C", "1"),
        ("max_iter", 0), ("max_iter", 1.5), ("max_iter", True),
        ("tol", -1e-3), ("tol", NAN), ("tol", "x"),
        ("solver_tol", 0), ("solver_tol", -1.0), ("solver_tol", NAN),
        ("solver_max_iter", 0), ("solver_max_iter", 2.5), ("solver_max_iter", True),
    ],
}
CASES = [(cls, name, value) for cls, bad in BAD.items() for name, value in bad]


def _data(cls):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5))
    y = np.arange(40) % 2
    return X, (np.where(y == 1, 1, -1) if cls not in (SAOLA, GroupSAOLA, KOFSD, GDM) else y)


def _id(case):
    cls, name, value = case
    return f"{cls.__name__}-{name}={value!r}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_bad_value_raises_one_line_naming_the_parameter(case):
    cls, name, value = case
    est = cls(**{name: value})  # constructors store, never validate
    assert getattr(est, name) is value
    with pytest.raises(ValueError) as info:
        est._validate_params()
    message = str(info.value)
    assert message.startswith(f"{name} must be"), message
    assert "\n" not in message
    shown = repr(value) if not (isinstance(value, float) and math.isnan(value)) else "nan"
    if not isinstance(value, list):
        assert f"got {shown}" in message, message


@pytest.mark.parametrize("case", CASES[::3], ids=[_id(c) for c in CASES[::3]])
def test_fit_and_partial_fit_validate_first(case):
    cls, name, value = case
    X, y = _data(cls)
    with pytest.raises(ValueError, match=f"^{name} must be"):
        cls(**{name: value}).fit(X, y)
    if hasattr(cls, "partial_fit"):
        est = cls(**{name: value})
        with pytest.raises(ValueError, match=f"^{name} must be"):
            est.partial_fit(X, y)
        learned = [a for a in vars(est) if a.endswith("_")]
        assert learned == [], learned  # nothing learned from a refused call


def test_gamma2_must_stay_below_gamma1():
    # the distance card of the K-OFSD paper (section 3.4) needs gamma1 > gamma2
    KOFSD(gamma1=1.0, gamma2=0.5)._validate_params()
    with pytest.raises(ValueError,
                       match=r"^gamma2 must be a number in \[0, gamma1\) with gamma1 = 0\.5, got 1\.0$"):
        KOFSD(gamma1=0.5, gamma2=1.0)._validate_params()


def test_decay_of_ofs_must_stay_positive():
    OFS(eta=0.5, lam=1.9)._validate_params()
    with pytest.raises(ValueError, match=r"^lam must be a number in \[0, 1/eta\)"):
        OFS(eta=0.5, lam=2.0)._validate_params()
    model = OFS(2, lam=0.0).fit(np.eye(4), [1, -1, 1, -1])  # lam = 0: no decay, no ball
    assert np.isfinite(model.coef_).all()


def test_exact_messages():
    cases = [
        (SAOLA(alpha=-0.5), "alpha must be a number in (0, 1), got -0.5"),
        (SAOLA(alpha="abc"), "alpha must be a number in (0, 1), got 'abc'"),
        (SAOLA(alpha=NAN), "alpha must be a number in (0, 1), got nan"),
        (KOFSD(k=0), "k must be an integer >= 1, got 0"),
        (OFS(eta=-1), "eta must be a finite number > 0, got -1"),
        (OFS(n_features_to_select=-3),
         "n_features_to_select must be None, an integer >= 1 or a fraction in (0, 1], got -3"),
        (SAOLA(test="chi2"), "test must be one of 'fisher_z', 'mi', got 'chi2'"),
        (KOFSD(compat="lofs"), "compat must be one of None, 'zhou', got 'lofs'"),
        (SAOLA(n_bins=np.int64(1)), "n_bins must be None or an integer >= 2, got 1"),
    ]
    for est, expected in cases:
        with pytest.raises(ValueError) as info:
            est._validate_params()
        assert str(info.value) == expected


GOOD = [
    SAOLA(), SAOLA(test="mi", alpha=np.float64(0.05), delta=0.1, bound="max", max_features=3,
                   compat="lofs", n_bins=np.int32(10)),
    GroupSAOLA(), KOFSD(), KOFSD(k=np.int64(3), alpha=0, card="distance", compat="zhou"),
    OFS(), OFS(0.5, eta=1, lam=0, radius=INF, normalize="Standardize"), OFS(np.int64(3)),
    PerceptronTruncation(1.0), RandomSelection(random_state=np.random.default_rng(0), redraw=True),
    OFSPartial(epsilon=1, normalize="standardize"), OFSRandomPartial(random_state=7),
    PerceptronRandomPartial(normalize=None), GDM(), GDM(tau=0.5, C=10, tol=0),
]


@pytest.mark.parametrize("est", GOOD, ids=lambda e: repr(e))
def test_good_values_pass(est):
    est._validate_params()


@pytest.mark.parametrize("name", sorted(registry.ALGORITHMS))
def test_registry_builds_defaults_and_validates(name):
    spec = registry.get(name)
    base = {"n_features": 8} if spec.kind == "instances" else {}
    algo = spec.build(base)
    algo._validate_params()
    bad = "n_features_per_step" if name == "gdm" else (
        "n_features_to_select" if spec.kind == "instances" else (
            "k" if name == "kofsd" else "alpha"))
    with pytest.raises(ValueError, match=f"^{bad} must be"):
        spec.build(dict(base, **{bad: -3}))


def test_every_algorithm_class_defines_validate_params():
    for cls in BAD:
        assert "_validate_params" in vars(cls) or cls is GroupSAOLA, cls
        assert not hasattr(cls, "_check_params"), cls  # merged: one function per algorithm


def test_from_state_validates_too():
    state = SAOLA().fit(*_data(SAOLA)).to_state()
    state["params"]["alpha"] = 2.0
    with pytest.raises(ValueError, match="^alpha must be"):
        SAOLA.from_state(state)


# ------------------------------------------------------------------------------ labels
def test_check_labels_messages():
    with pytest.raises(ValueError) as info:
        registry.get("saola").check_labels(np.zeros(10, dtype=int))
    assert str(info.value) == "saola needs at least two classes: the labels have a single class (0)"
    with pytest.raises(ValueError) as info:
        registry.get("ofs").check_labels([0, 1, 2, 1])
    assert str(info.value) == ("ofs is a binary classifier: the labels have 3 classes (0, 1, 2); "
                               "map them to two classes first")
    with pytest.raises(ValueError, match=r"^the labels contain NaN \(1 of 3\)"):
        registry.get("kofsd").check_labels(np.array([0.0, np.nan, 1.0]))
    with pytest.raises(ValueError, match="single class"):
        registry.get("pe-rand").check_labels(["a", "a"])
    with pytest.raises(ValueError, match="empty"):
        registry.get("saola").check_labels([])
    with pytest.raises(ValueError, match=r"12 classes \(0, 1, .*, \.\.\. \(12 in all\)\)"):
        registry.get("rand").check_labels(np.arange(12))


def test_check_labels_names_labels_mixing_strings_and_numbers():
    mixed = np.array(["a", 1, "a", 1], dtype=object)
    for name in ("saola", "kofsd", "ofs", "gdm"):
        with pytest.raises(ValueError, match="^the labels mix strings and numbers"):
            registry.get(name).check_labels(mixed)


def test_check_labels_accepts_what_works():
    for name, spec in registry.ALGORITHMS.items():
        spec.check_labels(["no", "yes", "no"])
        spec.check_labels(np.array([[0], [1]]))  # a column vector
        if not spec.binary_only:
            spec.check_labels([0, 1, 2])  # multi-class is fine for feature streams


def test_binary_only_flag():
    flags = {name: spec.binary_only for name, spec in registry.ALGORITHMS.items()}
    assert flags == {
        "saola": False, "saola-max": False, "group-saola": False, "kofsd": False,
        "ofs": True, "ofs-partial": True, "pe-trun": True, "rand": True, "ofs-rand": True,
        "pe-rand": True, "gdm": True,
    }
    assert all(spec.kind in ("features", "instances") for spec in registry.ALGORITHMS.values())


def test_gdm_is_served_on_instance_streams():
    from streamfs.algorithms.gdm_stream import GDMStream

    spec = registry.get("gdm")
    assert spec.kind == "instances" and spec.binary_only
    assert isinstance(spec.build({"tau": 0.5, "n_features": 8}), GDMStream)
    with pytest.raises(ValueError, match="^tau must be"):
        spec.build({"tau": 2})
    with pytest.raises(ValueError, match="binary classifier"):
        spec.check_labels([0, 1, 2])
    with pytest.raises(ValueError, match="^gdm window of max_instances=100000 x n_features=2000"):
        spec.build({"n_features": 2000})
    assert not hasattr(registry, "BATCH_ALGORITHMS")

def test_a_parameter_the_setting_does_not_use_is_warned_of_once_at_the_start():
    """`-p delta=0.1` (the MI test's threshold) with Fisher's z, or KOFSD's gamma with another
    card, was ignored without a word; a producer says it before it publishes (open_advice)."""
    import warnings

    from streamfs.algorithms.opening import open_advice

    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 8))
    y = (X[:, 0] > 0).astype(int)
    cases = [(SAOLA(delta=0.1, n_bins=5), "SAOLA(test='fisher_z') ignores delta=0.1 (used with "
              "test='mi' only) and n_bins=5 (used with test='mi' only)"),
             (SAOLA(test="mi", alpha=0.05), "SAOLA(test='mi') ignores alpha=0.05 (used with "
              "test='fisher_z' only)"),
             (KOFSD(gamma=0.9, gamma1=0.8), "KOFSD(card='imbalanced') ignores gamma=0.9 (used "
              "with card='weight' only) and gamma1=0.8 (used with card='distance' only)"),
             (KOFSD(card="distance", gamma=0.9), "KOFSD(card='distance') ignores gamma=0.9 "
              "(used with card='weight' only)")]
    for selector, said in cases:
        assert open_advice(selector, y) == [said]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            selector.partial_fit(X[:, :4], y)
            selector.partial_fit(X[:, 4:], y)  # once a stream, at its start
        assert [str(w.message) for w in caught if "ignores" in str(w.message)] == [said]
    # the setting that uses them, or defaults: nothing said
    for selector in (SAOLA(test="mi", delta=0.1, n_bins=5), SAOLA(alpha=0.05),
                     KOFSD(card="weight", gamma=0.9), KOFSD()):
        assert selector._params_advice() is None and open_advice(selector, y) == []
