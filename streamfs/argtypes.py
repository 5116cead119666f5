"""What the module entry points (``python -m streamfs.bench.*``, ``streamfs.evaluation.all``)
share with the CLI's conventions: values checked as argparse reads them (exit 2, one line,
before anything runs), names checked against those that exist, and a stop by Ctrl-C or
SIGTERM said in one line with the shell's 128 + signal."""

from __future__ import annotations

import argparse
import math
import signal
import sys
from typing import Callable, Sequence


def positive_int(text: str) -> int:
    """A whole number of at least 1.

    >>> positive_int("3")
    3
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return value


def whole_number(text: str) -> int:
    """A whole number of at least 0 (a seed)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 0, got {text!r}")
    return value


def positive_number(text: str) -> float:
    """A finite number above 0 (seconds, a threshold).

    >>> positive_number("0.5")
    0.5
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text!r}")
    return value


def known_names(parser: argparse.ArgumentParser, option: str, names: Sequence[str],
                known: Sequence[str], what: str = "name") -> list[str]:
    """``names``, each one of ``known`` and given once; else ``parser.error`` (exit 2)."""
    from streamfs.algorithms._suggest import did_you_mean

    names = [n.strip() for n in names]
    if not names or not all(names):
        parser.error(f"{option}: an empty {what} in {','.join(names)!r}")
    for name in names:
        if name not in known:
            parser.error(f"{option}: unknown {what} {name!r}{did_you_mean(name, list(known))}")
    twice = [name for i, name in enumerate(names) if name in names[:i]]
    if twice:
        parser.error(f"{option}: {twice[0]!r} given twice")
    return names


def dataset_names(parser: argparse.ArgumentParser, option: str, names: Sequence[str]
                  ) -> list[str]:
    """``names`` as datasets of ``$STREAMFS_DATASETS`` (exit 2 for one that is not there)."""
    from streamfs.datasets import available, datasets_dir

    known = available()
    if not known:
        parser.error(f"no datasets under {datasets_dir()}: set STREAMFS_DATASETS")
    return known_names(parser, option, names, known, "dataset")


def run_module(main: Callable[[], int | None]) -> None:
    """Run a module's ``main`` and exit with its code; Ctrl-C or SIGTERM ends it with one line
    ("interrupted") and 128 + the signal, not a traceback (the CLI's way:
    :func:`streamfs.broker.remember_interrupts`)."""
    from streamfs.broker import interrupting_signal, lost_interrupt, remember_interrupts

    remember_interrupts(signal.SIGTERM)
    try:
        code = main()
    except (KeyboardInterrupt, SystemError) as exc:  # SystemError: one a compiled call lost
        if isinstance(exc, SystemError) and not lost_interrupt(exc):
            raise
        print("interrupted", file=sys.stderr)
        sys.exit(128 + interrupting_signal())
    sys.exit(code or 0)
