"""The algorithm parameters of the command line, ``-p KEY=VALUE``."""

from __future__ import annotations

import json
from typing import Any

import click

from streamfs.cli.errors import UsageProblem


PARAM_HELP = ("Algorithm parameter (repeatable). VALUE is read as JSON where it parses (3, 0.5, "
              "true, null; Python's True, False, None too), [a,b] as a list, else as text. "
              "`streamfs algorithms NAME` lists NAME's parameters and defaults.")


_PYTHON_CONSTANTS = {"True": True, "False": False, "None": None}


def param_value(text: str) -> Any:
    """The value of a ``-p KEY=VALUE``: JSON where it parses (numbers, null, true, lists...),
    a bracketed list of bare words as a list (each item as JSON where it parses, else text:
    the shell has eaten the quotes of ``classes=["a","b"]``, and the README writes
    ``classes=[a,b]``), else the text itself. Python's spellings ``True``, ``False`` and
    ``None`` are read as JSON's ``true``, ``false`` and ``null``: the README and the docstrings
    give the parameters in Python, and no parameter takes those words as text.

    >>> [param_value(v) for v in ["3", "0.5", "null", "mi", '["a", 1]']]
    [3, 0.5, None, 'mi', ['a', 1]]
    >>> param_value("[benign,malignant]"), param_value("[ a , 2, 'b' ]"), param_value("[]")
    (['benign', 'malignant'], ['a', 2, 'b'], [])
    >>> param_value("False"), param_value("None"), param_value("true")
    (False, None, True)
    """
    if text in _PYTHON_CONSTANTS:
        return _PYTHON_CONSTANTS[text]
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
        if key in params:  # the last one would win without a word
            raise UsageProblem(f"--param {key!r} given twice")
        params[key] = param_value(value)
    return params
