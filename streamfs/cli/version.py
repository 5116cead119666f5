"""``streamfs version``."""

from __future__ import annotations

import click

from streamfs import __version__
from streamfs.cli.group import main


@main.command()
def version() -> None:
    """Print the version."""
    click.echo(__version__)
