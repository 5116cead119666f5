"""Selections as the commands print them: a table per result, or one line of JSON."""

from __future__ import annotations

import json
from typing import Any

import click

from streamfs.cli.stdout import stdout_console, writing_output


def _shown(text: Any) -> str:
    """An id (or any text from a record) for a human: as it is when every character is
    printable, else as a Python string literal, so that a control character (``\\x1f``, a
    newline, an escape sequence) shows instead of vanishing or acting on the terminal."""
    text = str(text)
    return text if text.isprintable() else repr(text)


def _json_line(message: dict) -> str:
    """One message as one line of JSON (NDJSON): the same text the worker's JSON format uses."""
    from streamfs.codec.text import _plain

    return json.dumps(_plain(message), separators=(",", ":"), ensure_ascii=False)


def _nothing_selected(result: dict) -> str | None:
    """Why a final selection is empty, when every feature failed the relevance test: an empty
    table alone does not say that the threshold, not the data, is the thing to change."""
    counters = result.get("counters", {})
    seen = counters.get("n_features_seen", 0)
    if not result.get("final") or result["selection"] or not seen:
        return None
    if counters.get("n_irrelevant") != seen:
        return None
    return (f"nothing selected: all {seen} features failed the relevance test"
            + (f"; {rule}" if (rule := _relevance_rule(result)) else ""))


def _rejected_note(result: dict) -> str | None:
    """Under a final result the worker computed without some of its run's input: a count in
    the title alone is easily missed, and the selection is not the data's."""
    n = result.get("counters", {}).get("rejected_messages", 0)
    if not result.get("final") or not n:
        return None
    return (f"the worker rejected {n} message(s) of this run, left out of this selection "
            f"(streamfs dead-letters --stream {_shown(result['stream'])})")


def _relevance_rule(result: dict) -> str | None:
    """The relevance test of ``result``'s algorithm with the values it ran with."""
    from streamfs.algorithms import registry

    try:
        spec = registry.get(result["algorithm"])
        used = spec.build(result.get("params", {})).get_params()  # defaults filled in
    except ValueError:
        return None
    if "saola" in spec.name and used.get("test") == "fisher_z":
        return (f"a feature is relevant when its Fisher z-test p-value is below alpha "
                f"({used['alpha']}); a larger alpha admits more")
    if "saola" in spec.name:
        return (f"a feature is relevant when its symmetrical uncertainty with the label exceeds "
                f"delta ({used['delta']}); a smaller delta admits more")
    if spec.name == "kofsd":
        return (f"a feature is relevant when its dependency Dep_K({{f}}) exceeds alpha "
                f"({used['alpha']}); a smaller alpha admits more")
    return None


#: the most rows a selection's table shows: drawing one of 100,000 features took rich 50 s,
#: and no terminal is read that far (--json has every feature)
TABLE_ROWS = 1000


def _print_results(results: list[dict], as_json: bool) -> None:
    with writing_output():
        _write_results(results, as_json)


def _write_results(results: list[dict], as_json: bool) -> None:
    if as_json:
        for r in results:
            click.echo(_json_line(r))
        return
    from rich.table import Table
    from rich.text import Text

    console = stdout_console()
    for r in results:
        run = f" · run {r['run']}" if r.get("run", 1) != 1 else ""
        counters = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in
                             r.get("counters", {}).items())
        title = (f"{_shown(r['stream'])} · {r['algorithm']}{run} · v{r['version']}"
                 f"{' · final' if r.get('final') else ''}")
        # heading and counters as lines of their own: as the table's title they wrapped at the
        # table's width, mid-counter ("final · rejected" / "messages 0")
        console.print(Text(title, style="bold"))  # no markup: a stream id may hold brackets
        if counters:
            console.print(Text(counters))
        table = Table()
        # group-saola's features carry the group they were selected in (as --json shows)
        grouped = any("group" in item for item in r["selection"])
        for col in ("#", "feature", "name", *(("group",) if grouped else ()), "score",
                    "affiliated"):
            table.add_column(col, overflow="fold")
        for i, item in enumerate(r["selection"][:TABLE_ROWS]):
            affiliated = item.get("affiliated", [])
            aff = ", ".join(_shown(a[2] if len(a) > 2 else a[0]) for a in affiliated[:8])
            more = len(affiliated) - 8
            score = item.get("score")
            group = (str(item.get("group", "")),) if grouped else ()
            # cells as Text: a feature name is the user's text, not rich markup ("[mg/L]"
            # vanished, "x [/]" raised MarkupError after the whole selection had run)
            table.add_row(*map(Text, (str(i), str(item["feature"]),
                                      _shown(item.get("name", "")), *group,
                                      "" if score is None else f"{score:.4g}",
                                      aff + (f" (+{more})" if more > 0 else ""))))
        console.print(table)
        if (more := len(r["selection"]) - TABLE_ROWS) > 0:
            console.print(f"... and {more} more selected features (--json lists every one)",
                          markup=False)
        if (why := _nothing_selected(r)) is not None:
            console.print(why, markup=False)
        if (note := _rejected_note(r)) is not None:
            console.print(note, markup=False)
