"""Paper reproductions (and any study) as points: configs in `configs/`, one package per paper,
each registered here with one line; `fabricsim reproduce NAME` runs them (`experiments.base`).

    from fabricsim.experiments import EXPERIMENTS, run_experiment
    exp = EXPERIMENTS["swing"]
    report = run_experiment(exp, exp.load_config(None), quick=True)   # map_fn=pool.map for processes
"""

from __future__ import annotations

from .base import Experiment, evaluate_points, reproduce, run_experiment

EXPERIMENTS: dict[str, Experiment] = {}


def register(exp: Experiment) -> Experiment:
    """Add a study to the registry; it becomes `fabricsim reproduce NAME`.

    Parameters
    ----------
    exp : Experiment
        The study (its `name` is the key).

    Returns
    -------
    Experiment
        `exp`, unchanged.
    """
    EXPERIMENTS[exp.name] = exp
    return exp


from . import ace, fred, swing, topoopt  # noqa: E402  (the studies import `base`, which must exist first)

register(swing.EXPERIMENT)
register(fred.EXPERIMENT)
register(ace.EXPERIMENT)
register(topoopt.EXPERIMENT)

__all__ = ["EXPERIMENTS", "Experiment", "evaluate_points", "register", "reproduce", "run_experiment"]
