"""The names of a stream's selected features, for its results.

Algorithms report features by arrival position. A feature block may carry ``columns`` (the
source column of each of its features) and ``names``; the processor stores them as records of
their own (``<stream>␟m␟<start>``, ``<stream>␟n␟<start>``, see :mod:`streamfs.worker.processor`)
and :class:`FeatureNaming` turns positions into source ids and names, reading those records once
and keeping them in memory (they never change once written).
"""

from __future__ import annotations

import bisect
from typing import Any, Callable, Mapping

import numpy as np

from streamfs.codec import unpackb
from streamfs.worker.state_records import map_key, names_key


class FeatureNaming:
    """Source ids and names of a processor's streams' features.

    ``store`` is the processor's table; ``state_entry(stream, name, ref)`` reads one of its
    state entries (the naming rule an ``open`` stored is one).
    """

    def __init__(self, store: Mapping[str, bytes],
                 state_entry: Callable[[str, str, str], Any]) -> None:
        self.store = store
        self._state_entry = state_entry
        self._maps: dict[str, dict[int, np.ndarray]] = {}  # stream -> block start -> columns
        self._names: dict[str, dict] = {}  # stream -> naming rule and block start -> names
        self._resolved: dict[str, dict[int, tuple[int, str]]] = {}  # position -> (source, name)

    def forget(self, stream: str) -> None:
        """Drop what is cached for ``stream``."""
        for cache in (self._maps, self._names, self._resolved):
            cache.pop(stream, None)

    def add_columns(self, stream: str, start: int, columns: np.ndarray) -> None:
        """Keep the source ``columns`` of the block at position ``start`` (the caller writes
        their record)."""
        self._maps.setdefault(stream, {})[start] = columns  # immutable: safe to cache

    def add_names(self, stream: str, header: dict, start: int, names: list[str]) -> None:
        """Keep the ``names`` of the block at position ``start`` (the caller writes their
        record)."""
        self._naming(stream, header)[start] = names

    def rule_names(self, stream: str, header: dict) -> list[str] | None:
        """The names the stream's ``open`` gave its features (an instance stream's), if any."""
        return self._naming(stream, header)["rule"]["names"]

    def _naming(self, stream: str, header: dict) -> dict:
        """The stream's naming: ``{"rule": {...}, start: [names of that block], ...}``."""
        cached = self._names.get(stream)
        if cached is None:
            digest = header["states"].get("__names__")
            rule = (self._state_entry(stream, "__names__", digest) if digest
                    else {"names": None, "prefix": "x", "base": 0})
            cached = self._names[stream] = {"rule": rule}
        return cached

    def name_selection(self, stream: str, header: dict, selection: list[dict]) -> list[dict]:
        """Give every selected and affiliated feature its source column id and its name.

        Algorithms report arrival positions. Blocks that carried ``columns`` map them to
        source columns and blocks that carried ``names`` name them; other features are
        named by the stream's rule (``x<source id>`` unless the ``open`` said otherwise).
        """
        maps = self._maps.setdefault(stream, {})
        naming = self._naming(stream, header)
        rule = naming["rule"]
        map_starts, name_starts = header.get("maps", []), header.get("name_blocks", [])
        rule_names, prefix, base = rule["names"], rule["prefix"], rule["base"]
        n_rule_names = 0 if rule_names is None else len(rule_names)

        def rule_name(source: int) -> str:
            return rule_names[source] if source < n_rule_names else f"{prefix}{source + base}"

        if not map_starts and not name_starts:
            # positions are source ids, named by the rule: cheaper to name than to cache (a
            # churning selection, as OFS's over a million features, would miss every time).
            # One comprehension: this runs for every item of every result.
            named = [{"feature": item["feature"], "name": rule_name(item["feature"]), **item}
                     for item in selection]
            for out in named:
                if out.get("affiliated"):
                    out["affiliated"] = [[a, d, rule_name(a)] for a, d in out["affiliated"]]
            return named

        # a position's source id and name never change once its block arrived
        resolved = self._resolved.setdefault(stream, {})
        if len(resolved) > 100_000:  # bounded: a churning selection over millions of features
            resolved.clear()

        def block(starts: list[int], f: int) -> int | None:
            i = bisect.bisect_right(starts, f) - 1
            return starts[i] if i >= 0 else None

        def resolve(f: int) -> tuple[int, str]:
            found = resolved.get(f)
            if found is None:
                found = resolved[f] = lookup(f)
            return found

        def lookup(f: int) -> tuple[int, str]:
            source = f
            start = block(map_starts, f)
            if start is not None:
                if start not in maps:
                    maps[start] = unpackb(self.store[map_key(stream, start)])
                if f - start < len(maps[start]):
                    source = int(maps[start][f - start])
            start = block(name_starts, f)
            if start is not None:
                if start not in naming:
                    naming[start] = unpackb(self.store[names_key(stream, start)])
                if f - start < len(naming[start]):
                    return source, naming[start][f - start]
            return source, rule_name(source)

        named = []
        for item in selection:
            source, name = resolve(item["feature"])
            # the algorithm's fields after these two, in its order
            out = {"feature": source, "name": name, **item}
            out["feature"] = source
            if item.get("affiliated"):
                out["affiliated"] = [[source_a, d, name_a] for (source_a, name_a), d in
                                     ((resolve(a), d) for a, d in item["affiliated"])]
            named.append(out)
        return named
