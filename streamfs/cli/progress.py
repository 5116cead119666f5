"""``produce``'s progress bar on stderr."""

from __future__ import annotations


def _progress_bar(show: bool, description: str, total: int | None, unit: str, items: str):
    """A context manager yielding ``advance(completed, items_sent)``; a no-op when hidden.

    Files advance by bytes read (the reader runs at most one chunk ahead of sending), in-memory
    data by rows or columns sent.
    """
    from contextlib import contextmanager

    @contextmanager
    def bar():
        if not show:
            yield lambda completed, sent: None
            return
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress,
                                   TextColumn, TimeElapsedColumn, TimeRemainingColumn,
                                   TransferSpeedColumn)

        amount = ([DownloadColumn(), TransferSpeedColumn()] if unit == "bytes"
                  else [MofNCompleteColumn()])
        with Progress(TextColumn("{task.description}"), BarColumn(), *amount,
                      TextColumn("{task.fields[sent]:,} " + items), TimeElapsedColumn(),
                      TimeRemainingColumn(), console=Console(stderr=True)) as prog:
            task = prog.add_task(description, total=total, sent=0)
            yield lambda completed, sent: prog.update(task, completed=completed, sent=sent)

    return bar()
