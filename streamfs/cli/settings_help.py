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
