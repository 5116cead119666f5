"""The algorithm parameters of the command line, ``-p KEY=VALUE``."""

from __future__ import annotations

import json
from typing import Any

import click

from streamfs.cli.errors import UsageProblem


PARAM_HELP = ("Algorithm parameter (repeatable). VALUE is read as a number where it is one "
              "(3, 0.5, .05, 1e-3), true/false and none/null in any case (Python's True, "
              "False, None too), JSON where it parses, [a,b] as a list, else as text. "
              "`streamfs algorithms NAME` lists NAME's parameters and defaults.")


_CONSTANTS = {"true": True, "false": False, "none": None, "null": None}


def param_value(text: str) -> Any:
    """The value of a ``-p KEY=VALUE``, as every command reads it (`select`, `produce`,
    `evaluate`): a number where Python reads one (``.05``, ``+0.3``, ``07``, ``1e-3``: JSON
    refused these, so `select` said ".05" was no number in (0, 1) where `evaluate` took it),
    ``true``/``false``/``none``/``null`` in any case (the README and the docstrings give the
    parameters in Python; no parameter takes those words as text), JSON where it parses
    (lists...), a bracketed list of bare words as a list (each item as JSON where it parses,
    else text: the shell has eaten the quotes of ``classes=["a","b"]``, and the README writes
    ``classes=[a,b]``), else the text itself.

    >>> [param_value(v) for v in ["3", "0.5", ".05", "+0.3", "07", "1e-3", "null", "mi"]]
    [3, 0.5, 0.05, 0.3, 7, 0.001, None, 'mi']
    >>> param_value("[benign,malignant]"), param_value("[ a , 2, 'b' ]"), param_value("[]")
    (['benign', 'malignant'], ['a', 2, 'b'], [])
    >>> param_value("False"), param_value("None"), param_value("true"), param_value("NONE")
    (False, None, True, None)
    >>> param_value('["a", 1]')
    ['a', 1]
    """
    if text.strip().lower() in _CONSTANTS:
        return _CONSTANTS[text.strip().lower()]
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    bracketed = text.strip()
    inner = bracketed[1:-1]
    if bracketed[:1] != "[" or bracketed[-1:] != "]" or any(c in inner for c in "[]{}"):
        return text  # not a flat list: left to the parameter's own check
    return [_item(item.strip()) for item in inner.split(",")] if inner.strip() else []


def _item(text: str) -> Any:
    """An item of a bracketed list: JSON where it parses, text without its quotes otherwise."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text[1:-1] if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"" else text


def _parse_params(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``k=v`` pairs; values as :func:`param_value` reads them (JSON when they parse: numbers,
    null, true...; ``[a,b]`` as a list of texts)."""
    params: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"expected key=value, got {pair!r}", param_hint="--param")
        key, value = pair.split("=", 1)
        if not key.strip():  # "-p =3": it was "unknown parameter(s)  for algorithm 'saola'"
            raise click.BadParameter(f"expected key=value, got {pair!r} (no key)",
                                     param_hint="--param")
        if key in params:  # the last one would win without a word
            raise UsageProblem(f"--param {key!r} given twice")
        params[key] = param_value(value)
    return params
