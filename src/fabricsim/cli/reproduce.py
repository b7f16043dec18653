"""`fabricsim reproduce PAPER`: the paper reproductions."""

from __future__ import annotations

from typing import Optional

import typer
from rich.console import Console

from .app import app, out_console as _out

reproduce_app = typer.Typer(help="Reproduce papers' results with fabricsim's models.", no_args_is_help=True)
app.add_typer(reproduce_app, name="reproduce")


def _reproduce_command(paper: str, doc: str, quick_help: str):
    """One `fabricsim reproduce PAPER` command: experiments.PAPER.reproduce with configs/PAPER.yaml."""

    def command(
        quick: bool = typer.Option(False, "--quick", help=quick_help),
        out: Optional[str] = typer.Option(None, "--out", help=f"output folder for CSV/JSON/PNG (default out/{paper})"),
        config: Optional[str] = typer.Option(None, "--config", help=f"reproduction config (default configs/{paper}.yaml)"),
        json_out: bool = typer.Option(False, "--json", help="print JSON instead of tables"),
    ):
        import importlib

        importlib.import_module(f"fabricsim.experiments.{paper}").reproduce(config, out, quick, json_out, _out(),
                                                                            Console(stderr=True))

    command.__doc__ = doc
    reproduce_app.command(paper)(command)


_reproduce_command("swing", "Swing (NSDI'24): gains over the best other all-reduce on tori, ours beside the paper's.",
                   "the CI subset of tori (config: quick)")
_reproduce_command("fred", "FRED (ISCA'25): the wafer mesh vs FRED's fabric (Fred-A..D), ours beside the paper's.",
                   "the CI subset (config: quick)")
