"""What a command asks of the broker around its work: is it reachable, does a worker consume."""

from __future__ import annotations

import click

from streamfs.cli.errors import UsageProblem
from streamfs.settings import Settings


def _reachable(settings: Settings) -> None:
    from streamfs.broker import check_reachable

    if problem := settings.bootstrap_problem():
        raise UsageProblem(problem)
    check_reachable(settings.kafka_config())


def _without_worker(settings: Settings, group: str) -> str | None:
    """What to say when no worker consumes (its consumer group ``group`` has no members),
    else None."""
    from streamfs.broker import group_members

    if group_members(settings.kafka_config(), group) == 0:
        return f"no streamfs worker is consuming (consumer group {group!r} has no members)"
    return None


def _worker_warning(cause: str) -> str:
    """The warning for ``cause`` (:func:`_without_worker`'s)."""
    return (f"warning: {cause}: results arrive once `streamfs worker` runs and has joined it (a "
            f"worker joins after loading its kernels; its first start after an install "
            f"compiles them first, a minute or two)")


def _warn_without_worker(settings: Settings, group: str) -> None:
    if cause := _without_worker(settings, group):
        click.echo(_worker_warning(cause), err=True)
