"""The checks of an input message's fields that need no stream state (no broker, no processor:
the processor's tests send the same mistakes through whole streams)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from streamfs.worker.input_checks import (InvalidInput, block_array, block_groups,
                                          check_labels, clipped, continue_from, group_runs,
                                          misplaced_fields, source_columns)


@pytest.mark.parametrize("kind, shape", [("features", "N x columns"),
                                         ("instances", "instances x d")])
@pytest.mark.parametrize("X", [None, [[1.0, 2.0]], np.zeros(3), np.zeros((2, 2, 2))])
def test_a_block_s_x_must_be_a_2d_array(kind, shape, X):
    with pytest.raises(InvalidInput, match=rf"'X' of an? \w+ block must be a 2-D array "
                                           rf"\({shape}\)"):
        block_array(X, kind)


def test_a_2d_dense_or_sparse_block_is_taken_as_it_is():
    dense, sparse = np.zeros((3, 2)), sp.csc_matrix((3, 2))
    assert block_array(dense, "features") is dense
    assert block_array(sparse, "instances") is sparse


def test_source_columns_are_distinct_int64_indices():
    assert source_columns(None, 3) is None
    got = source_columns(np.array([5, 0, 2**63 - 1], dtype=np.uint64), 3)
    assert got.dtype == np.int64 and got.tolist() == [5, 0, 2**63 - 1]
    # an empty list (floats once decoded) for a block of no columns: nothing to map
    assert source_columns([], 0) is None
    assert source_columns(np.zeros(0), 0) is None


@pytest.mark.parametrize("columns, n, reason", [
    ([0, 1], 3, "'columns' must list one source column index per column"),
    ([0.0, 1.0, 2.0], 3, "'columns' must list one source column index per column"),
    ([0, -1, 2], 3, "'columns' holds a negative source column index (-1)"),
    (np.array([1, 2**63], dtype=np.uint64), 2,
     f"'columns' holds a source column index beyond 2^63 - 1 ({2**63})"),
    ([4, 7, 4], 3, "'columns' names source column 4 more than once: each column of a block is "
                   "another source column"),
])
def test_bad_source_columns_are_refused_naming_what_is_wrong(columns, n, reason):
    with pytest.raises(InvalidInput) as exc:
        source_columns(columns, n)
    assert str(exc.value) == reason


def test_groups_are_group_saola_s_only():
    assert block_groups(None, "saola", 3) == {}
    with pytest.raises(InvalidInput, match="'groups' apply to group-saola streams only, not to "
                                           "'kofsd'"):
        block_groups([0, 0, 1], "kofsd", 3)
    runs = block_groups(["a", "a", "b"], "group-saola", 3)
    assert runs["group_ids"] == ["a", "b"]
    assert [g.tolist() for g in runs["groups"]] == [[0, 1], [2]]


@pytest.mark.parametrize("groups, reason", [
    (None, "a group-saola block needs 'groups': one group id per column"),
    ([0, 0], "a group-saola block's 'groups' must give one group id (an integer or a string) "
             "per column, 3 here; got 2 ids"),
    (np.array([0.0, 0.0, 1.0]), "a group-saola block's 'groups' must give one group id (an "
                                "integer or a string) per column, 3 here; got an array of shape "
                                "(3,) and dtype float64"),
    ([0, 1.5, 1.5], "group ids must be integers or strings, got 1.5"),
    ([True, True, False], "group ids must be integers or strings, got True"),
    ([0, 1, 0], "group id 0 comes back after another group in 'groups'"),
])
def test_bad_groups_are_refused(groups, reason):
    with pytest.raises(InvalidInput) as exc:
        group_runs(groups, 3)
    assert str(exc.value).startswith(reason)


def test_groups_may_come_as_an_integer_array_as_columns_may():
    # a third party's numpy ids were refused as missing ("needs 'groups'")
    runs = group_runs(np.array([4, 4, 7]), 3)
    assert runs["group_ids"] == [4, 7] and [g.tolist() for g in runs["groups"]] == [[0, 1], [2]]


def test_an_empty_block_has_no_group():
    assert group_runs([], 0) == {"groups": [], "group_ids": []}


@pytest.mark.parametrize("y, reason", [
    ([], "labels 'y' is empty"),
    ([1, "a"], "labels 'y' mixes label types ['int', 'str']"),
    ([True, 1], "labels 'y' mixes label types ['bool', 'int']"),
    ([None, 1], "labels 'y' holds ['NoneType'] values: a label is a string or a number"),
    (np.zeros((2, 2)), "labels 'y' must be a 1-D array or list of labels"),
    ([1.0, float("nan")], "labels 'y' contains NaN or infinite values"),
])
def test_bad_labels_are_refused(y, reason):
    with pytest.raises(InvalidInput) as exc:
        check_labels(y, "labels 'y'")
    assert str(exc.value) == reason


def test_labels_of_one_type_become_an_array():
    assert check_labels(["b", "a"], "y").tolist() == ["b", "a"]
    assert check_labels([0, 1, 1], "y").dtype.kind == "i"


@pytest.mark.parametrize("value, reason", [
    ({"run": 1}, "'continue_from' must be a map with 'run' and 'version' only"),
    ({"run": 1, "version": -1}, "'continue_from' 'version' must be an integer from 0 to 2^53 - 1"),
    ({"run": True, "version": 2}, "'continue_from' 'run' must be an integer from 0 to 2^53 - 1"),
    ({"run": 2**53, "version": 0}, "'continue_from' 'run' must be an integer from 0 to 2^53 - 1"),
])
def test_continue_from_is_a_run_and_a_version(value, reason):
    assert continue_from({}) is None
    assert continue_from({"continue_from": {"run": 2, "version": 7}}) == (2, 7)
    with pytest.raises(InvalidInput) as exc:
        continue_from({"continue_from": value})
    assert str(exc.value).startswith(reason)


def test_fields_of_another_kind_of_message_are_named_with_where_they_belong():
    assert misplaced_fields("features", {"kind": "close"}) is None
    said = misplaced_fields("instances", {"kind": "close", "X": [[1.0]]})
    assert said == "'close' carries 'X' (it belongs in an 'instances' block), which it does " \
                   "not read"


def test_long_reasons_are_cut_and_say_so():
    assert clipped("abc", 5) == "abc"
    assert clipped("x" * 10, 4) == "xxxx… (cut: 10 characters in all)"
