"""Medians over repeated bench runs (no broker)."""

from __future__ import annotations

import pytest

from streamfs.bench.summary import median_of_runs


def _run(backlog: float, ratio: float, fetch: float, same: bool = True) -> dict:
    return {"scenario": "dense-features", "shape": [2, 3], "messages": 4,
            "backlog_seconds": backlog, "ratio_backlog_to_raw": ratio,
            "backlog_phase_seconds": {"fetch": fetch, "steps": 2 * fetch},
            "selection_matches_in_process": same}


def test_medians_of_numbers_and_phases_others_from_the_first_run():
    s = median_of_runs([_run(1.0, 0.9, 0.1), _run(4.0, 0.3, 0.5), _run(2.0, 0.6, 0.2),
                        _run(3.0, 0.5, 0.3)])
    assert s["backlog_seconds"] == 2.5 and s["ratio_backlog_to_raw"] == pytest.approx(0.55)
    assert s["backlog_phase_seconds"] == pytest.approx({"fetch": 0.25, "steps": 0.5})
    assert s["ratio_ranges"] == {"ratio_backlog_to_raw": [0.3, 0.9]}
    assert s["shape"] == [2, 3] and s["messages"] == 4 and s["repeats"] == 4
    assert s["selection_matches_in_process"] is True


def test_one_mismatched_selection_fails_the_summary():
    assert median_of_runs([_run(1, 1, 1), _run(1, 1, 1, same=False)])[
        "selection_matches_in_process"] is False


def test_runs_of_different_scenarios_are_refused():
    other = {**_run(1, 1, 1), "scenario": "sparse-features"}
    with pytest.raises(ValueError, match="different scenarios"):
        median_of_runs([_run(1, 1, 1), other])
    with pytest.raises(ValueError, match="at least one run"):
        median_of_runs([])
