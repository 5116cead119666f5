"""Click options shared by the command modules (`streamfs.cli`, `streamfs.evaluation.command`)."""

from __future__ import annotations

import json
from typing import Any

import click
from click.core import ParameterSource


class SettingProblem(click.ClickException):
    """A ``STREAMFS_*`` variable's value that cannot be used: one line naming it, exit 2."""

    exit_code = 2


class EnvOption(click.Option):
    """An option that may come from an environment variable (``envvar``): a value from the
    variable that the option's type refuses is said as the other settings' are, in one line
    naming the variable (``STREAMFS_LOG_LEVEL: 'warn' is not one of ...``), not as a mistake
    in the command's flags."""

    def process_value(self, ctx: click.Context, value: Any) -> Any:
        try:
            return super().process_value(ctx, value)
        except click.BadParameter as exc:
            if ctx.get_parameter_source(self.name) is not ParameterSource.ENVIRONMENT:
                raise
            raise SettingProblem(f"{self.envvar}: {exc.message}") from None


def param_value(text: str) -> Any:
    """The value of a ``-p KEY=VALUE``: JSON where it parses (numbers, null, true, lists...),
    a bracketed list of bare words as a list (each item as JSON where it parses, else text:
    the shell has eaten the quotes of ``classes=["a","b"]``, and the README writes
    ``classes=[a,b]``), else the text itself.

    >>> [param_value(v) for v in ["3", "0.5", "null", "mi", '["a", 1]']]
    [3, 0.5, None, 'mi', ['a', 1]]
    >>> param_value("[benign,malignant]"), param_value("[ a , 2, 'b' ]"), param_value("[]")
    (['benign', 'malignant'], ['a', 2, 'b'], [])
    """
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


#: the registry's names, in the help of select, produce and evaluate (kept equal by a test:
#: importing the registry would load numpy for every command, even `--help`)
ALGORITHMS_HELP = ("Algorithm: saola, saola-max, group-saola or kofsd (feature streams); ofs, "
                   "ofs-partial, pe-trun, rand, ofs-rand, pe-rand or gdm (instance streams).")

HEADER_OPTION = click.option(
    "--header/--no-header", default=None,
    help="Whether a CSV/TSV file has a header row (default: detect: a non-numeric field, or "
    "the column numbers 0, 1, 2, … that pandas writes, noted on stderr).")


#: group-saola's groups, read and checked the same way by `produce features`, `select`
#: and `evaluate`
GROUPS_OPTION = click.option(
    "--groups", "groups_file", type=click.Path(dir_okay=False),
    help="Features: JSON list of lists of column indices (group-saola groups).")
