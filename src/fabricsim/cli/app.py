"""The `fabricsim` app object and what every command module shares."""

from __future__ import annotations

import shutil

import typer
from rich.console import Console

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="fabricsim: simulate the networks that train large neural networks.",
)


@app.callback()
def _top(limit: list[str] = typer.Option(
        [], "--limit", help="raise a resource limit for this run, NAME=VALUE (repeatable), e.g. --limit npus=1e6; "
                            "names and defaults: docs/limits.md")):
    """fabricsim: simulate the networks that train large neural networks."""
    if limit:
        from ..limits import _LIMITS, current_limits, parse_limits
        from dataclasses import replace

        # main() runs each command in a copied context, so this does not outlive the command
        _LIMITS.set(replace(current_limits(), **parse_limits(limit)))


def out_console() -> Console:
    """The console commands print to (tables stay readable when piped or in a narrow terminal)."""
    return Console(soft_wrap=True, width=max(shutil.get_terminal_size((160, 24)).columns, 150))
