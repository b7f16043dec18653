"""`fabricsim reproduce NAME`: one subcommand per registered study (`fabricsim.experiments`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from ..experiments import EXPERIMENTS, Experiment, run_experiment
from .app import app, out_console

reproduce_app = typer.Typer(help="Reproduce papers' results with fabricsim's models.", no_args_is_help=True)
app.add_typer(reproduce_app, name="reproduce")


def reproduce(exp: Experiment, config: str | None, out: str | None, quick: bool, json_out: bool):
    """Run a registered study, write its files, print its tables (or JSON); returns the report."""
    cfg = exp.load_config(config)
    out_dir = Path(out) if out else exp.default_out
    if json_out:
        rep = run_experiment(exp, cfg, quick)
    else:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeElapsedColumn(), console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task(f"{exp.name} reproduction", total=None)

            def tick(done: int, total: int, label: str) -> None:
                bar.update(task, completed=done, total=total, description=f"{exp.name}: {label}")

            rep = run_experiment(exp, cfg, quick, progress=tick)
    files = exp.write(rep, out_dir)
    if json_out:
        d = exp.to_json(rep)
        d["files"] = [str(f) for f in files]
        print(json.dumps(d, indent=1))
    else:
        exp.render(rep, out_console(), files)
    return rep


def _command(exp: Experiment):
    def command(
        quick: bool = typer.Option(False, "--quick", help=exp.quick_help),
        out: Optional[str] = typer.Option(None, "--out", help=f"output folder for CSV/JSON/PNG (default {exp.default_out})"),
        config: Optional[str] = typer.Option(None, "--config", help=f"reproduction config (default configs/{exp.name}.yaml)"),
        json_out: bool = typer.Option(False, "--json", help="print JSON instead of tables"),
    ):
        reproduce(exp, config, out, quick, json_out)

    command.__doc__ = exp.summary
    return command


for _exp in EXPERIMENTS.values():
    reproduce_app.command(_exp.name)(_command(_exp))
