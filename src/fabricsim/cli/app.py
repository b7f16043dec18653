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


def out_console() -> Console:
    """The console commands print to (tables stay readable when piped or in a narrow terminal)."""
    return Console(soft_wrap=True, width=max(shutil.get_terminal_size((160, 24)).columns, 150))
