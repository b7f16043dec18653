"""`fabricsim reproduce NAME`: one subcommand per registered study (`fabricsim.experiments`).

The subcommands are read from `EXPERIMENTS` when the command line is parsed, so a study
registered there (one line in `experiments/__init__.py`) is a command with the same options as
every other (`--quick`, `--out`, `--force`, `--config`, `--json`), made by one function, `study_command`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import typer
from typer.core import TyperGroup

from .app import app, out_console
from .progress import QUIET_HELP, progress_bar

if TYPE_CHECKING:  # lazy: the studies (pydantic configs, every model) are imported when `reproduce` lists or runs them
    from ..experiments import Experiment


def study_command(exp: Experiment):
    """The `fabricsim reproduce NAME` command of a study.

    Parameters
    ----------
    exp : Experiment
        A registered study.

    Returns
    -------
    callable
        A typer command (help: `exp.summary`) that runs `experiments.base.reproduce` with a
        transient progress bar on stderr (off with `--quiet` or when stderr is not a terminal) and the tables
        (or `--json`) on stdout; with `--dask ADDRESS` (or `local:N`) the points run on a Dask cluster.
    """

    def command(
        quick: bool = typer.Option(False, "--quick", help=exp.quick_help),
        out: Optional[str] = typer.Option(None, "--out", help=f"output folder for CSV/JSON/PNG, new or empty (default {exp.default_out} "
                                                              "in the current folder)"),
        force: bool = typer.Option(False, "--force", help="replace the results of an earlier run in the output folder"),
        config: Optional[str] = typer.Option(None, "--config", help=f"reproduction config (default configs/{exp.name}.yaml)"),
        json_out: bool = typer.Option(False, "--json", help="print JSON instead of tables"),
        quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
        dask: Optional[str] = typer.Option(None, "--dask", help="evaluate the points on Dask: a scheduler address or local:N"),
    ):
        import contextlib

        from ..experiments.base import reproduce
        from ..sweep.run import dask_map

        with progress_bar(f"reproduce {exp.name}", quiet) as progress, \
                (dask_map(dask) if dask else contextlib.nullcontext(map)) as map_fn:
            reproduce(exp, config, out, quick, json_out, out_console(), progress, map_fn, force=force)

    command.__doc__ = exp.summary
    return command


class _Studies(TyperGroup):
    """The `reproduce` group: its subcommands are the registry's studies, in registry order."""

    def list_commands(self, ctx) -> list[str]:
        """The registered studies' names."""
        from ..experiments import EXPERIMENTS

        return list(EXPERIMENTS)

    def get_command(self, ctx, name: str):
        """The command of study `name` (None if no study has that name)."""
        from ..experiments import EXPERIMENTS

        exp = EXPERIMENTS.get(name)
        if exp is None:
            return None
        one = typer.Typer(add_completion=False)
        one.command(name)(study_command(exp))
        return typer.main.get_command(one)


reproduce_app = typer.Typer(cls=_Studies, help="Reproduce papers' results with fabricsim's models.", no_args_is_help=True)
app.add_typer(reproduce_app, name="reproduce")
