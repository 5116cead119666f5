"""GDM on instance streams: sliding window, refits at multiples of refit_every, state."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import DataConversionWarning

from streamfs.algorithms import gdm_stream
from streamfs.algorithms.gdm import GDM
from streamfs.algorithms.gdm_stream import GDMStream
from streamfs.codec import decode, packb, unpackb

PARAMS = {"n_features_per_step": 3, "tau": 0.25}


def _data(n=400, d=20, seed=0, labels=(1, -1)):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, 6] = X[:, 2] + 0.05 * rng.normal(size=n)  # an affiliate of feature 2
    y = np.where(X[:, 2] - X[:, 9] + 0.3 * rng.normal(size=n) > 0, labels[0], labels[1])
    return X, y


def _blocks(n, seed=1, top=60):
    rng = np.random.default_rng(seed)
    cuts, a = [], 0
    while a < n:
        b = min(n, a + int(rng.integers(1, top)))
        cuts.append((a, b))
        a = b
    return cuts


def _batch(X, y):
    return GDM(**PARAMS).fit(X, y).selection()


def test_final_selection_is_batch_gdm_on_the_window():
    X, y = _data(labels=("yes", "no"))
    model = GDMStream(n_features=20, refit_every=10_000, max_instances=150, **PARAMS)
    for a, b in _blocks(len(y)):
        model.partial_fit(X[a:b], y[a:b])
    assert model.selection() == [] and model.n_refits_ == 0  # no refit point reached
    model.finish()
    assert model.n_seen_ == 400 and model.n_buffered_ == 150 and model.n_refits_ == 1
    expected = _batch(X[-150:], y[-150:])
    assert expected and model.selection() == expected
    assert model.get_support(indices=True).tolist() == sorted(s["feature"] for s in expected)
    model.finish()  # already fitted on this window: nothing to do
    assert model.n_refits_ == 1


def test_sparse_blocks_give_the_dense_result():
    X, y = _data(seed=4)
    X[np.abs(X) < 0.8] = 0.0
    dense = GDMStream(refit_every=100, max_instances=170, **PARAMS)
    sparse = GDMStream(refit_every=100, max_instances=170, **PARAMS)
    for a, b in _blocks(len(y), seed=5):
        dense.partial_fit(X[a:b], y[a:b])
        sparse.partial_fit(sp.csr_matrix(X[a:b]), y[a:b])
        assert sparse.selection() == dense.selection()
    assert sparse.finish().selection() == dense.finish().selection() == _batch(X[-170:], y[-170:])


def test_refits_exactly_at_multiples_of_refit_every():
    X, y = _data(n=500, seed=2)
    r, cap = 70, 120
    model = GDMStream(refit_every=r, max_instances=cap, **PARAMS)
    previous = []
    for a, b in _blocks(len(y), seed=3, top=160):  # some blocks cross several multiples
        model.partial_fit(X[a:b], y[a:b])
        at = (b // r) * r
        assert model.n_seen_ == b and model.n_buffered_ == min(b, cap)
        assert model.last_fit_at_ == at
        if at == 0:
            assert model.selection() == [] and model.n_refits_ == 0
        else:
            expected = _batch(X[max(0, at - cap):at], y[max(0, at - cap):at])
            assert model.selection() == expected
            if (a // r) * r == at:  # no new refit point in this block
                assert model.selection() == previous
        previous = model.selection()
    assert model.n_refits_ == len({(b // r) for _, b in _blocks(len(y), seed=3, top=160)} - {0})


def test_window_keeps_the_last_max_instances():
    X, y = _data(n=300, seed=6)
    model = GDMStream(refit_every=10**6, max_instances=64, **PARAMS)
    model.partial_fit(X[:50], y[:50])
    model.partial_fit(X[50:250], y[50:250])  # larger than the window
    model.partial_fit(X[250:290], y[250:290])  # the ring wraps
    model._ordered()
    assert np.array_equal(model._X[:64], X[290 - 64:290])
    assert model.finish().selection() == _batch(X[290 - 64:290], y[290 - 64:290])


def test_single_class_window_keeps_the_last_selection():
    X, y = _data(n=200, seed=7)
    y[100:] = y[0]
    model = GDMStream(refit_every=100, max_instances=80, **PARAMS)
    model.partial_fit(X[:100], y[:100])
    first = model.selection()
    assert first == _batch(X[20:100], y[20:100])
    model.partial_fit(X[100:200], y[100:200])  # window of one class at 200: no fit
    assert model.selection() == first and model.n_refits_ == 1 and model.last_fit_at_ == 100
    assert model.finish().selection() == first


def test_memory_rule_refuses_with_the_numbers():
    with pytest.raises(ValueError) as info:
        GDMStream(n_features=5000, max_instances=100_000)._validate_params()
    assert str(info.value) == (
        "gdm window of max_instances=100000 x n_features=5000 x 8 bytes = 4000000000 bytes "
        "exceeds max_buffer_bytes=1073741824; use max_instances <= 26843 or a larger "
        "max_buffer_bytes")
    with pytest.raises(ValueError, match="one instance needs 80 bytes"):
        GDMStream(n_features=10, max_buffer_bytes=64)._validate_params()
    GDMStream(n_features=10, max_instances=8, max_buffer_bytes=640)._validate_params()  # fits
    model = GDMStream(max_instances=10, max_buffer_bytes=400)  # d from the first block
    with pytest.raises(ValueError, match="n_features=6 x 8 bytes = 480 bytes"):
        model.partial_fit(np.zeros((2, 6)), [0, 1])
    for bad in ({"refit_every": 0}, {"max_instances": 1.5}, {"max_buffer_bytes": True}):
        with pytest.raises(ValueError, match=f"^{next(iter(bad))} must be an integer"):
            GDMStream(**bad)._validate_params()


def test_third_class_is_refused_before_anything_is_learned():
    X, y = _data(n=60)
    model = GDMStream(refit_every=10).partial_fit(X[:30], y[:30])
    before = model.to_state()
    with pytest.raises(ValueError, match=r"^Only binary classification is supported: GDMStream got "
                                         r"the labels of 3 classes \(-1, 1, 7\)"):
        model.partial_fit(X[30:40], np.r_[y[30:39], 7])
    after = model.to_state()
    assert model.n_seen_ == 30 and after["counters"] == before["counters"]
    assert after["classes"] == before["classes"]
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        model.partial_fit(X[30:32], [0.5, 1.0])
    assert model.n_seen_ == 30
    with pytest.raises(ValueError, match=r"^GDMStream needs two classes, y has one class \(1\)$"):
        GDMStream().fit(X[:5], np.ones(5, dtype=int))


def _roundtrip(model, stored):
    """to_state through the codec, writing each chunk once as the worker does (the chunks
    stored already are left out of the state)."""
    state = model.to_state(stored_columns=set(stored))
    columns = state.pop("columns", {})
    for k in columns:
        assert (columns[k] is None) == (k in stored)
        if k not in stored:
            stored[k] = packb(np.asarray(columns[k]))
    for k in [k for k in stored if k not in columns]:
        del stored[k]
    state = {name: unpackb(packb(value)) for name, value in state.items()}
    state["columns"] = {k: unpackb(v) for k, v in stored.items()}
    return GDMStream.from_state(state)


@pytest.mark.parametrize("chunk", [gdm_stream.CHUNK_VALUES, 50, 7])
def test_state_round_trip_after_every_block_is_bit_identical(monkeypatch, chunk):
    monkeypatch.setattr(gdm_stream, "CHUNK_VALUES", chunk)
    X, y = _data(n=420, d=12, seed=8, labels=(3, -2))
    X[np.abs(X) < 0.5] = 0.0
    params = dict(PARAMS, refit_every=45, max_instances=100)
    straight, interrupted = GDMStream(**params), GDMStream(**params)
    interrupted = GDMStream.from_state(interrupted.to_state())
    stored: dict = {}
    for a, b in _blocks(len(y), seed=9, top=70):
        block = sp.csr_matrix(X[a:b]) if a % 2 else X[a:b]
        straight.partial_fit(block, y[a:b])
        interrupted = _roundtrip(interrupted.partial_fit(block, y[a:b]), stored)
        assert interrupted.selection() == straight.selection()
        assert interrupted.to_state()["counters"] == straight.to_state()["counters"]
        assert chunk == gdm_stream.CHUNK_VALUES and len(stored) <= 100 * 13 // chunk + 1
    assert straight.n_refits_ == len({b // 45 for _, b in _blocks(len(y), seed=9, top=70)} - {0})
    assert interrupted.finish().selection() == straight.finish().selection()
    assert straight.selection() == _batch(X[-100:], y[-100:])


def test_state_is_plain_data_with_bounded_chunks_and_a_snapshot():
    X, y = _data(n=300, d=600, seed=10)
    model = GDMStream(refit_every=1000, max_instances=250).partial_fit(X, y)
    state = model.to_state()
    sizes = [len(packb(state["columns"][k])) for k in state["columns"]]
    assert sizes and max(sizes) < 1.1 * 2**20 and len(packb(state["tail"])) < 1.1 * 2**20
    encoded = packb(state)  # plain data, as every learner's state
    model.partial_fit(X[:100], y[:100])  # moves the window on: the snapshot stays as it was
    assert packb(state) == encoded
    restored = GDMStream.from_state(unpackb(encoded))
    assert restored.to_state()["counters"] == unpackb(encoded)["counters"]
    partial = model.to_state(stored_columns=set(model.to_state()["columns"]))
    with pytest.raises(ValueError, match="chunk .* of the window is missing"):
        GDMStream.from_state(partial)


def test_processor_runs_gdm_on_an_instance_stream():
    from streamfs.producers import instance_stream_messages
    from streamfs.worker.processor import StreamProcessor
    from tests.worker.test_processor import _run

    X, y = _data(n=360, d=16, seed=11, labels=("pos", "neg"))
    params = dict(PARAMS, refit_every=100, max_instances=300)
    msgs = list(instance_stream_messages("s", X, y, "gdm", params, block_bytes=40 * 16 * 8))
    assert len(msgs) > 6
    results, dead = _run(StreamProcessor("instances", {}), msgs)
    restarted, dead2 = _run(StreamProcessor("instances", {}), msgs, fresh_every=2)
    assert not dead and not dead2 and restarted == results
    final = decode(results[-1])
    assert final["final"] and final["counters"]["n_seen"] == 360
    assert final["counters"]["n_refits"] == 4  # 100, 200, 300 and close
    expected = GDM(**PARAMS).fit(X[-300:], y[-300:]).selection()
    got = [{"feature": s["feature"], "score": s["score"],
            "affiliated": [[a, r] for a, r, _ in s["affiliated"]]} for s in final["selection"]]
    assert expected and got == expected
    assert all(s["name"] == f"x{s['feature']}" for s in final["selection"])
    # every published intermediate selection is GDM's at the last refit point
    seen = 0
    for result in map(decode, results[:-1]):
        at = (result["counters"]["n_seen"] // 100) * 100
        if at == 0:
            assert result["selection"] == []
            continue
        want = GDM(**PARAMS).fit(X[max(0, at - 300):at], y[max(0, at - 300):at]).selection()
        assert [s["feature"] for s in result["selection"]] == [s["feature"] for s in want]
        seen += 1
    assert seen >= 3


def test_whole_data_set_equals_batch_gdm_with_the_defaults_of_select():
    from streamfs.offline import run_offline

    X, y = _data(n=250, d=25, seed=12)
    result = run_offline("gdm", X, y, dict(PARAMS))
    assert result["params"]["max_instances"] == 250
    assert [[s["feature"], s["score"]] for s in result["selection"]] == \
        [[s["feature"], s["score"]] for s in _batch(X, y)]


def test_blocks_beyond_the_window_bound_are_refused_before_they_enter_it():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 4))
    y = np.where(X[:, 0] > 0, 1, -1)
    model = GDMStream(refit_every=1000, max_instances=100)
    X[7, 2] = 1e160
    with pytest.raises(ValueError, match=r"columns \[2\].*N = 100 instances"):
        model.partial_fit(X, y)
    assert not hasattr(model, "n_seen_") or model.n_seen_ == 0


def test_scikit_learn_contract_names_tags_and_fit_errors():
    """As GDM: data frame columns name the features and are checked at transform; sparse
    input is declared; a fit needs rows and two classes (a stream may start with one)."""
    import pandas as pd
    from sklearn.utils import get_tags

    X, y = _data(n=120, d=12, seed=12)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(12)])
    model = GDMStream(n_features_per_step=2, refit_every=1000).fit(frame, y)
    assert model.feature_names_in_.tolist() == list(frame.columns)
    assert model.get_feature_names_out().tolist() == [f"f{j}" for j in model.support_]
    with pytest.raises(ValueError, match="feature names should match"):
        model.transform(frame[frame.columns[::-1]])
    assert get_tags(model).input_tags.sparse and get_tags(model).target_tags.required
    with pytest.raises(ValueError, match="y has one class"):
        GDMStream().fit(X, np.ones(len(y)))
    with pytest.raises(ValueError, match="0 sample"):
        GDMStream().fit(X[:0], y[:0])
    assert GDMStream().partial_fit(X[:5], np.ones(5)).n_seen_ == 5  # one class so far: fine
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        col = GDMStream(n_features_per_step=2, refit_every=1000).fit(X, y.reshape(-1, 1))
    assert col.support_.tolist() == GDMStream(n_features_per_step=2,
                                              refit_every=1000).fit(X, y).support_.tolist()


def test_fit_without_y_says_so_as_the_other_selectors_do():
    X, _ = _data(n=50, d=12)
    with pytest.raises(ValueError, match=r"^GDMStream requires y to be passed, but the target "
                                         r"y is None$"):
        GDMStream().fit(X, None)


def test_state_keeps_the_feature_names():
    import pandas as pd

    X, y = _data(n=200, d=12, seed=3)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(12)])
    model = GDMStream(refit_every=100, **PARAMS)
    model.partial_fit(frame.iloc[:150], y[:150])
    state = unpackb(packb(model.to_state()))
    assert state["feature_names"] == list(frame.columns)
    back = GDMStream.from_state(state)
    assert back.feature_names_in_.tolist() == list(frame.columns)
    assert back.get_feature_names_out().tolist() == model.get_feature_names_out().tolist()
    assert back.get_feature_names_out().tolist() == [f"f{j}" for j in sorted(model.support_)]
    # the restored learner checks the next block's names as the live one does
    for m in (model, back):
        m.partial_fit(frame.iloc[150:], y[150:])
        with pytest.raises(ValueError, match="feature names should match"):
            m.partial_fit(frame[frame.columns[::-1]].iloc[:5], y[:5])
    assert back.selection() == model.selection()
    assert "feature_names" not in GDMStream(**PARAMS).partial_fit(X[:20], y[:20]).to_state()


def test_states_record_the_algorithm_and_older_states_without_it_still_load():
    X, y = _data(n=150, d=12, seed=5)
    stream = GDMStream(refit_every=100, **PARAMS).fit(X, y)
    batch = GDM(**PARAMS).fit(X, y)
    s_state, b_state = stream.to_state(), batch.to_state()
    assert s_state["algorithm"] == "GDMStream" and b_state["algorithm"] == "GDM"
    with pytest.raises(ValueError, match="^GDM.from_state was given a state of algorithm "
                                         "'GDMStream', not of 'GDM'$"):
        GDM.from_state(s_state)
    # written before states named their algorithm: told apart by GDMStream's refit_every
    old_stream = {k: v for k, v in s_state.items() if k != "algorithm"}
    old_batch = {k: v for k, v in b_state.items() if k != "algorithm"}
    assert GDMStream.from_state(old_stream).selection() == stream.selection()
    assert GDM.from_state(old_batch).selection() == batch.selection()
    with pytest.raises(ValueError, match="^GDMStream.from_state was given a state of algorithm "
                                         "'GDM', not of 'GDMStream'$"):
        GDMStream.from_state(old_batch)
    with pytest.raises(ValueError, match="records no algorithm"):
        GDMStream.from_state({"no": "params"})


def test_labels_of_another_type_than_earlier_blocks_are_refused():
    X, y = _data(n=60, d=12, labels=("yes", "no"))
    model = GDMStream(refit_every=1000, **PARAMS).partial_fit(X[:30], y[:30])
    with pytest.raises(ValueError, match=r"^Mix of label input types \(string and number\)$"):
        model.partial_fit(X[30:], np.where(y[30:] == "yes", 1, 0))
    assert model.n_seen_ == 30 and sorted(model.classes_seen_) == ["no", "yes"]


def test_n_iter_is_the_last_fits_and_survives_a_state_round_trip():
    X, y = _data()
    m = GDMStream(refit_every=100)
    assert m.partial_fit(X[:50], y[:50]).n_iter_ == 0  # no fit yet
    m.partial_fit(X[50:], y[50:])
    assert m.n_buffered_ == len(y)  # the last fit's window: every instance
    assert m.n_iter_ == m._gdm().fit(X, y).n_iter_ >= 1
    assert GDMStream.from_state(unpackb(packb(m.to_state()))).n_iter_ == m.n_iter_


def test_a_stream_no_window_of_which_held_two_classes_warns_at_finish():
    X, _ = _data(n=40)
    y = np.repeat([0, 1], 20)
    with pytest.warns(UserWarning, match=r"GDMStream selected nothing: no window of the stream "
                                         r"held two classes \(max_instances=1, 40 instances"):
        model = GDMStream(max_instances=1).fit(X, y)
    assert model.selected_.tolist() == [] and model.n_refits_ == 0
    # a window that held both once keeps its selection without a word
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = GDMStream(max_instances=10, refit_every=5)
        model.partial_fit(X[:25], y[:25]).partial_fit(X[25:], y[25:]).finish()
    assert model.n_refits_ == 1 and model.selected_.size > 0


def test_fit_sizes_its_window_to_the_rows_it_is_given():
    """fit of 100 x 2000 was refused: a window of max_instances=100000 rows would exceed
    max_buffer_bytes, though fit holds only its rows. The parameters stay as given."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 2000))
    y = np.where(X[:, 3] > 0, 1, 0)
    model = GDMStream(**PARAMS).fit(X, y)
    assert model.get_params()["max_instances"] == 100_000
    assert model.selection() == _batch(X, y)
    # n_features given: fit still holds only the rows (it checked max_instances' window)
    assert GDMStream(**PARAMS, n_features=2000).fit(X, y).selection() == model.selection()
    X, y = _data()
    small = dict(PARAMS, refit_every=1000, max_buffer_bytes=400 * 20 * 8)  # 400 rows of d=20
    model = GDMStream(**small).fit(X, y)
    assert model.selection() == _batch(X, y) and model.n_buffered_ == 400
    restored = GDMStream.from_state(unpackb(packb(model.to_state())))
    assert restored.finish().selection() == model.selection()
    with pytest.raises(ValueError, match=r"^gdm window of 401 instances \(the rows of X\) x "
                                         r"n_features=20 x 8 bytes = 64160 bytes exceeds"):
        GDMStream(**small).fit(np.vstack([X, X[:1]]), np.r_[y, y[0]])
    # continuing the stream needs the window of max_instances, under the memory rule then
    with pytest.raises(ValueError, match=r"^gdm window of max_instances=100000 x n_features=20"):
        restored.partial_fit(X[:5], y[:5])
    assert restored.n_seen_ == 400
    grown = GDMStream(**PARAMS, refit_every=1000, max_instances=600).fit(X[:300], y[:300])
    grown.partial_fit(X[300:], y[300:])
    stream = GDMStream(**PARAMS, refit_every=1000, max_instances=600).partial_fit(X[:300], y[:300])
    stream.partial_fit(X[300:], y[300:])
    assert grown.n_buffered_ == stream.n_buffered_ == 400
    assert grown.finish().selection() == stream.finish().selection() == _batch(X, y)

