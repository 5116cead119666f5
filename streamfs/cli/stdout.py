"""The commands' stdout: a rich console on it, and a failed write as one line and an exit
code (a closed pipe, a full disk)."""

from __future__ import annotations

import errno
import os
import sys
from contextlib import contextmanager
from typing import Any, Iterator

import click


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
def writing_output(path: str | None = None) -> Iterator[None]:
    """A write to stdout (or to the file ``path``) that fails (a full disk, ``> /dev/full``, an
    I/O error, no permission) as one line and exit 1, not a traceback; a closed pipe is left to
    `streamfs` itself (exit 141)."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        if path is not None:
            raise click.ClickException(f"cannot write {path}: {exc}") from None
        stdout_to_devnull()
        raise click.ClickException(f"cannot write the output: {exc}") from None
