"""Source ids and names of selected features, from the records a stream's blocks left (no
broker, no algorithm: a dict stands for the table)."""

import numpy as np

from streamfs.codec import packb
from streamfs.worker.naming import FeatureNaming
from streamfs.worker.state_records import map_key, names_key


def _naming(store, rule=None):
    """A FeatureNaming over ``store`` whose stream's ``open`` stored ``rule`` (if any)."""
    read = []

    def state_entry(stream, name, ref):
        read.append((stream, name, ref))
        return rule

    return FeatureNaming(store, state_entry), read


def _header(maps=(), name_blocks=(), rule=False):
    return {"states": {"__names__": "d1"} if rule else {}, "maps": list(maps),
            "name_blocks": list(name_blocks)}


def test_without_blocks_that_name_features_the_rule_names_them():
    naming, _ = _naming({}, {"names": None, "prefix": "", "base": 1})
    out = naming.name_selection("s", _header(rule=True),
                                [{"feature": 4, "score": 0.5, "affiliated": [[2, 0.9]]}])
    assert out == [{"feature": 4, "name": "5", "score": 0.5, "affiliated": [[2, 0.9, "3"]]}]
    default, read = _naming({})
    assert default.name_selection("s", _header(), [{"feature": 0}]) == [
        {"feature": 0, "name": "x0"}]
    assert read == []  # no rule stored: nothing read


def test_blocks_map_positions_to_source_columns_and_names():
    # block 0 (positions 0-1): source columns 7, 3, named; block 2 (positions 2-3): columns only
    store = {map_key("s", 0): packb(np.array([7, 3])), names_key("s", 0): packb(["a", "b"]),
             map_key("s", 2): packb(np.array([9, 1]))}
    naming, _ = _naming(store)
    header = _header(maps=[0, 2], name_blocks=[0])
    out = naming.name_selection("s", header, [{"feature": 1, "affiliated": [[3, 0.4]]},
                                              {"feature": 2}])
    assert out == [{"feature": 3, "name": "b", "affiliated": [[1, 0.4, "x1"]]},
                   {"feature": 9, "name": "x9"}]


def test_records_are_read_once_and_forget_drops_them():
    store = {names_key("s", 0): packb(["a", "b"])}
    naming, _ = _naming(store)
    header = _header(name_blocks=[0])
    assert naming.name_selection("s", header, [{"feature": 0}])[0]["name"] == "a"
    store[names_key("s", 0)] = packb(["changed", "b"])  # never happens: records are immutable
    assert naming.name_selection("s", header, [{"feature": 0}])[0]["name"] == "a"  # cached
    naming.forget("s")
    assert naming.name_selection("s", header, [{"feature": 0}])[0]["name"] == "changed"


def test_blocks_added_in_memory_need_no_record():
    naming, _ = _naming({})
    header = _header(maps=[0], name_blocks=[0])
    naming.add_columns("s", 0, np.array([5]))
    naming.add_names("s", header, 0, ["five"])
    assert naming.name_selection("s", header, [{"feature": 0}]) == [
        {"feature": 5, "name": "five"}]


def test_rule_names_are_the_opens():
    rule = {"names": ["p", "q"], "prefix": "x", "base": 0}
    naming, read = _naming({}, rule)
    assert naming.rule_names("s", _header(rule=True)) == ["p", "q"]
    assert naming.name_selection("s", _header(rule=True), [{"feature": 1}, {"feature": 2}]) == [
        {"feature": 1, "name": "q"}, {"feature": 2, "name": "x2"}]
    assert read == [("s", "__names__", "d1")]  # read once, then kept
