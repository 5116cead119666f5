"""Click options shared by the command modules (those of `streamfs.cli`, and
`streamfs.evaluation.command`)."""

from __future__ import annotations

import math
from typing import Any

import click
from click.core import ParameterSource


class Seconds(click.FloatRange):
    """A range of seconds that also refuses NaN (which compares false with every bound, so
    ``click.FloatRange`` lets it through: ``--timeout nan`` meant no limit, or a traceback)."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        seconds = super().convert(value, param, ctx)
        if math.isnan(seconds):
            self.fail(f"{value!r} is not a number of seconds.", param, ctx)
        return seconds


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


def _app_id(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``--app-id`` (or its variable, named so by :class:`EnvOption`) as the worker can use it:
    a consumer group and the start of its changelogs' names."""
    from streamfs.settings import app_id_problem

    if value is not None and (problem := app_id_problem(value)):
        raise click.BadParameter(problem)
    return value


#: the registry's names, in the help of select, produce and evaluate (kept equal by a test:
#: importing the registry would load numpy for every command, even `--help`)
ALGORITHMS_HELP = ("Algorithm: saola, saola-max, group-saola or kofsd (feature streams); ofs, "
                   "ofs-partial, pe-trun, rand, ofs-rand, pe-rand or gdm (instance streams).")


#: the label of a file, read by the same code in `produce`, `select` and `evaluate`
LABEL_OPTION = click.option(
    "--label", default=None,
    help="Label column (name or index) for CSV/TSV/Parquet/.npy files (default the last), or a "
    ".npy file of labels.")


#: columns that are neither features nor the label (a row id), as LABEL_OPTION names them
DROP_OPTION = click.option(
    "--drop", multiple=True, metavar="COLUMN",
    help="A column of a CSV/TSV/Parquet/.npy file that is neither a feature nor the label, "
    "such as a row id (name or index; repeat for several). Features are numbered without it.")


HEADER_OPTION = click.option(
    "--header/--no-header", default=None,
    help="Whether a CSV/TSV file has a header row (default: detect: a non-numeric field, or "
    "the column numbers 0, 1, 2, … that pandas writes, noted on stderr).")


#: how a LIBSVM file is read, the same in `produce` and `select`
N_FEATURES_OPTION = click.option(
    "--n-features", type=click.IntRange(min=1), default=None,
    help="LIBSVM: d; without it a first pass over the file finds the largest index.")


ZERO_BASED_OPTION = click.option(
    "--zero-based/--one-based", "zero_based", default=None,
    help="LIBSVM: indices start at 0 / at 1 (default: zero-based if any index 0 appears in the "
    "file).")


#: a feature stream's columns in a seeded order (`produce features`; `select` runs them so)
SHUFFLE_SEED_OPTION = click.option(
    "--shuffle-seed", type=click.IntRange(min=0), default=None,
    help="Features: send the columns in a seeded random order (blocks carry `columns`).")
#: group-saola's groups, read and checked the same way by `produce features`, `select`
#: and `evaluate`
GROUPS_OPTION = click.option(
    "--groups", "groups_file", type=click.Path(dir_okay=False),
    help="Features: JSON list of lists of column indices (group-saola groups).")
