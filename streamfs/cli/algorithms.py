"""``streamfs algorithms``: the algorithms, and each one's parameters."""

from __future__ import annotations

import json
from typing import Any

import click

from streamfs.cli.errors import UsageProblem
from streamfs.cli.group import main
from streamfs.cli.params import param_value
from streamfs.cli.stdout import writing_output


@main.command("algorithms")
@click.argument("name", required=False)
def algorithms(name: str | None) -> None:
    """List the algorithms, or NAME's parameters (-p KEY=VALUE) with their defaults and what
    they mean (from the estimators' docstrings)."""
    from streamfs.algorithms import registry

    formatter = click.HelpFormatter()
    if name is None:
        formatter.write_dl([(spec.name, f"({spec.kind[:-1]} streams) {spec.summary}")
                            for spec in registry.ALGORITHMS.values()])
        with writing_output():  # a full disk: one line, not a traceback
            click.echo(formatter.getvalue(), nl=False)
        return
    try:
        spec = registry.get(name)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    fixed = "".join(f"; {k}={_as_param(v)} (fixed by the name)" for k, v in spec.fixed.items())
    formatter.write_text(f"{spec.name} ({spec.kind[:-1]} streams): {spec.summary}{fixed}")
    with formatter.section("Parameters (-p KEY=VALUE; the default after =)"):
        formatter.write_dl([(f"{key}={_as_param(default)}", meaning or "(not described)")
                            for key, default, meaning in spec.parameters()])
    with writing_output():
        click.echo(formatter.getvalue(), nl=False)


def _as_param(value: Any) -> str:
    """A default as ``-p KEY=VALUE`` takes it back (:func:`param_value`)."""
    import inspect

    if value is inspect.Parameter.empty:
        return "(required)"
    if isinstance(value, str):
        return value if param_value(value) == value else json.dumps(value)
    return repr(value)
