import numpy as np

from streamfs.offline import run_offline


def test_gdm_offline_result_equals_the_estimator():
    from streamfs.algorithms.gdm import GDM

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 30))
    y = np.where(X[:, 4] - X[:, 9] > 0, "a", "b")
    names = [f"g{j}" for j in range(30)]
    result = run_offline("gdm", X, y, {"n_features_per_step": 3}, feature_names=names)
    expected = GDM(n_features_per_step=3).fit(X, y).selection()
    assert result["final"] and len(result["selection"]) == len(expected)
    for got, want in zip(result["selection"], expected):
        assert got["name"] == names[got["feature"]]
        assert {k: got[k] for k in want if k != "affiliated"} == \
            {k: v for k, v in want.items() if k != "affiliated"}
        assert [[a, d] for a, d, _ in got["affiliated"]] == want["affiliated"]
        assert all(name == names[a] for a, _, name in got["affiliated"])
    assert {4, 9} <= {s["feature"] for s in result["selection"]}


def test_a_data_frame_names_the_offline_selection():
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    result = run_offline("saola", X, y)
    assert [s["name"] for s in result["selection"]] == \
        [X.columns[s["feature"]] for s in result["selection"]]
    assert run_offline("saola", X, y, feature_names=[f"c{j}" for j in range(30)])[
        "selection"][0]["name"].startswith("c")


def _offline_features(algorithm, X, y, params=None):
    return [s["feature"] for s in run_offline(algorithm, X, y, params)["selection"]]


def test_offline_takes_the_inputs_the_estimators_take():
    import pandas as pd
    import pytest

    from streamfs.algorithms.kofsd import KOFSD
    from streamfs.algorithms.ofs import OFS
    from streamfs.producers.errors import InputDataError

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 120)
    X = np.round(rng.normal(size=(120, 6)) * 2)
    X[:, 2] += 4 * y
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(6)])
    mixed = frame.assign(c5=frame["c5"] > 0, c1=frame["c1"].astype("Int64"))  # objects as one
    for algorithm, params, cls in (("kofsd", {}, KOFSD), ("ofs", {"n_features_to_select": 3},
                                                          OFS)):
        plain = _offline_features(algorithm, X, y, params)
        assert plain and plain == [s["feature"] for s in cls(**params).fit(X, y).selection()]
        assert _offline_features(algorithm, X.tolist(), y, params) == plain  # was: no .shape
        assert _offline_features(algorithm, X, y[:, None], params) == plain  # was refused
        assert _offline_features(algorithm, X, pd.Series(y, dtype=object), params) == plain
        result = run_offline(algorithm, mixed, y, params)  # was: "X has dtype object"
        assert result["selection"] == run_offline(algorithm, mixed.astype(float), y,
                                                  params)["selection"]
        assert [s["name"] for s in result["selection"]] == [f"c{j}" for j in [
            s["feature"] for s in cls(**params).fit(mixed, y).selection()]]
    with pytest.raises(InputDataError, match="duplicate column names: c0"):
        run_offline("saola", frame.rename(columns={"c1": "c0"}), y)  # two features named c0


def test_a_warning_of_the_checks_and_of_the_algorithm_is_given_once():
    """run_offline warned of a budget over d twice: once as the producer's checks advise, once
    as the algorithm starts; it is said once, to the caller."""
    import warnings

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 5))
    with warnings.catch_warnings(record=True) as given:
        warnings.simplefilter("always")
        run_offline("ofs", X, (X[:, 0] > 0).astype(int), {"n_features_to_select": 8})
    said = [str(w.message) for w in given]
    assert said == ["n_features_to_select=8 is greater than n_features=5: all the features "
                    "will be kept"]
    assert given[0].filename == __file__
