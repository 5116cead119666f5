import numpy as np

from streamfs.offline import run_offline


def test_gdm_offline_result_equals_the_estimator():
    from streamfs.algorithms.gdm import GDM

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 30))
    y = np.where(X[:, 4] - X[:, 9] > 0, "a", "b")
    result = run_offline("gdm", X, y, {"n_features_per_step": 3})
    expected = GDM(n_features_per_step=3).fit(X, y).selection()
    assert result["final"] and result["selection"] == expected
    assert {4, 9} <= {s["feature"] for s in result["selection"]}
