"""The help of a command that reads the ``STREAMFS_*`` settings: every variable, with a few
words, its default and the flag that overrides it."""

from __future__ import annotations

from typing import Any

import click


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
                   ("STREAMFS_TOPICS", "The topic catalogue's file.", "topics/catalogue.toml"),
                   ("STREAMFS_DATASETS", "Directory of the papers' datasets, which the data "
                    "of a command may name (colon, madelon, ...).",
                    "../shared/datasets beside the project"))


#: what every command that talks to Kafka reads: :class:`Settings` fields (``security``:
#: every security variable) and other variables; a command adds its own (``reads=``)
CLIENT_READS = frozenset({"bootstrap_servers", "topic_prefix", "security", "STREAMFS_TOPICS"})
#: what the offline commands (``select``, ``evaluate``) read
OFFLINE_READS = frozenset({"STREAMFS_DATASETS", "STREAMFS_KERNEL_THREADS"})


def settings_help(flags: dict[str, str], reads: frozenset[str] | None = None
                  ) -> list[tuple[str, str]]:
    """``(variable, words)`` of every ``STREAMFS_*`` setting, from :class:`Settings`'s fields,
    their :data:`~streamfs.settings.DESCRIPTIONS` and defaults, and of
    :data:`OTHER_VARIABLES`; ``flags`` maps a variable to the flag that overrides it.
    ``reads``: only these fields and other variables (None: all, the worker's)."""
    from dataclasses import MISSING, fields

    from streamfs.settings import _SECURITY_ENV, DEFAULT_WORDS, DESCRIPTIONS, Settings

    rows = []
    for f in fields(Settings):
        if reads is not None and f.name not in reads:
            continue
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
    rows += [row for row in OTHER_VARIABLES
             if (row[0] != "STREAMFS_DATASETS" if reads is None else row[0] in reads)]
    # the flag first: the help wraps lines after hyphens, which would split it
    return [(env, (f"({flags[env]}) " if env in flags else "") + f"{words} Default: {default}.")
            for env, words, default in rows]


class SettingsCommand(click.Command):
    """A command whose help ends with the ``STREAMFS_*`` variables it reads, each with a few
    words, its default and the flag that overrides it (the command's own, or the main
    command's: ``streamfs --topic-prefix``). ``reads``: as :func:`settings_help`'s (default
    :data:`CLIENT_READS`; None: every variable but the datasets', the worker's)."""

    def __init__(self, *args: Any, reads: frozenset[str] | None = CLIENT_READS,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reads = reads

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        flags: dict[str, str] = {}
        chain = []  # the main command's context first: a command's own flag wins
        where: click.Context | None = ctx
        while where is not None:
            chain.insert(0, where)
            where = where.parent
        for where in chain:
            prefix = "" if where is ctx else f"{where.info_name} "
            for param in where.command.params:
                if isinstance(param, click.Option) and isinstance(param.envvar, str):
                    flags[param.envvar] = prefix + max(param.opts, key=len)
        with formatter.section("Environment variables (a flag in parentheses overrides its "
                               "variable)"):
            formatter.write_dl(settings_help(flags, self.reads))
        super().format_epilog(ctx, formatter)
