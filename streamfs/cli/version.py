"""``streamfs version``."""

from __future__ import annotations

import click

from streamfs import __version__
from streamfs.cli.group import main
from streamfs.cli.stdout import writing_output


@main.command()
def version() -> None:
    """Print the version."""
    with writing_output():  # a full disk: one line, not a traceback
        click.echo(__version__)
