"""Click options, and the console of tables on stdout, shared by the command modules
(those of `streamfs.cli`, and `streamfs.evaluation.command`)."""

from __future__ import annotations

import errno
import json
import os
import sys
from contextlib import contextmanager
from typing import Any, Iterator

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


def _default_words(name: str, value: Any) -> str:
    """A setting's default as the help shows it: sizes in MiB or GiB, times with their unit."""
    from streamfs.settings import _RANGES

    words = _RANGES[name].words if name in _RANGES else ""
    if isinstance(value, int) and name.endswith("_bytes") and value % (1 << 20) == 0:
        return f"{value >> 30} GiB" if value % (1 << 30) == 0 else f"{value >> 20} MiB"
    if "milliseconds" in words:
        return f"{value:g} ms"
    if "seconds" in words:
        return f"{value // 86400:g} days" if value >= 86400 and value % 86400 == 0 \
            else f"{value:g} s"
    return f"{value:g}" if isinstance(value, float) else repr(value)


#: variables the worker reads that are not :class:`~streamfs.settings.Settings`: name, words,
#: default
OTHER_VARIABLES = (("STREAMFS_KERNEL_THREADS", "Threads of the per-column kernels.",
                    "the CPUs this process may use"),
                   ("STREAMFS_TOPICS", "The topic catalogue's file.", "topics/catalogue.toml"))


def settings_help(flags: dict[str, str]) -> list[tuple[str, str]]:
    """``(variable, words)`` of every ``STREAMFS_*`` setting, from :class:`Settings`'s fields,
    their :data:`~streamfs.settings.DESCRIPTIONS` and defaults, and of
    :data:`OTHER_VARIABLES`; ``flags`` maps a variable to the flag that overrides it."""
    from dataclasses import MISSING, fields

    from streamfs.settings import _SECURITY_ENV, DEFAULT_WORDS, DESCRIPTIONS, Settings

    rows = []
    for f in fields(Settings):
        if f.name == "security":
            for env, key in _SECURITY_ENV.items():
                rows.append((env, DESCRIPTIONS["security"].format(key=key),
                             DEFAULT_WORDS.get(env, DEFAULT_WORDS["security"])))
            continue
        default = DEFAULT_WORDS.get(f.name)
        if default is None:
            value = f.default if f.default is not MISSING else f.default_factory()
            default = _default_words(f.name, value)
        rows.append((f"STREAMFS_{f.name.upper()}", DESCRIPTIONS[f.name], default))
    rows += OTHER_VARIABLES
    # the flag first: the help wraps lines after hyphens, which would split it
    return [(env, (f"({flags[env]}) " if env in flags else "") + f"{words} Default: {default}.")
            for env, words, default in rows]


class SettingsCommand(click.Command):
    """A command whose help ends with the ``STREAMFS_*`` variables it reads, each with a few
    words, its default and the flag that overrides it (the command's own, or the main
    command's: ``streamfs --topic-prefix``)."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        flags: dict[str, str] = {}
        for where, prefix in ((ctx.parent, f"{ctx.parent.info_name} " if ctx.parent else ""),
                              (ctx, "")):
            for param in where.command.params if where is not None else ():
                if isinstance(param, click.Option) and isinstance(param.envvar, str):
                    flags[param.envvar] = prefix + max(param.opts, key=len)
        with formatter.section("Environment variables (a flag in parentheses overrides its "
                               "variable)"):
            formatter.write_dl(settings_help(flags))
        super().format_epilog(ctx, formatter)


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


#: group-saola's groups, read and checked the same way by `produce features`, `select`
#: and `evaluate`
GROUPS_OPTION = click.option(
    "--groups", "groups_file", type=click.Path(dir_okay=False),
    help="Features: JSON list of lists of column indices (group-saola groups).")


def stdout_console(**kwargs: Any) -> Any:
    """A rich ``Console`` on stdout whose closed pipe (``| head``) raises ``BrokenPipeError``
    for the command to handle (`streamfs` exits 141, as with ``--json``): rich's own
    ``on_broken_pipe`` exits 1, which reads as a Kafka error or "no selection"."""
    from rich.console import Console

    class _PipedConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True  # the reader is gone: nothing more to write
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    return _PipedConsole(**kwargs)


def stdout_to_devnull() -> None:
    """Point stdout's file descriptor at /dev/null, so that flushing what is left in its
    buffer (at exit) does not fail on the closed pipe (or the full disk) again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


@contextmanager
def writing_output() -> Iterator[None]:
    """A write to stdout that fails (a full disk, ``> /dev/full``, an I/O error) as one line and
    exit 1, not a traceback; a closed pipe is left to `streamfs` itself (exit 141)."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        stdout_to_devnull()
        raise click.ClickException(f"cannot write the output: {exc}") from None
