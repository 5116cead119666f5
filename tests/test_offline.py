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
