"""Click options shared by the command modules (`streamfs.cli`, `streamfs.evaluation.command`)."""

from __future__ import annotations

import click

HEADER_OPTION = click.option(
    "--header/--no-header", default=None,
    help="Whether a CSV/TSV file has a header row (default: detect: a non-numeric field, or "
    "the column numbers 0, 1, 2, … that pandas writes, noted on stderr).")


#: group-saola's groups, read and checked the same way by `produce features`, `select`
#: and `evaluate`
GROUPS_OPTION = click.option(
    "--groups", "groups_file", type=click.Path(dir_okay=False),
    help="Features: JSON list of lists of column indices (group-saola groups).")
