"""How much longer a kernel runs when part of its NPU is taken: the one formula that the endpoint
protocol (`system.resources.slowed_task_times`), the analytical engine (per running task) and the
flow simulator's holds (`network.flow.Holds`, per compute flow) all use.

A kernel whose compute time is a and memory time c, both as fractions of its roofline time
max(compute, memory) (so the larger is 1), runs, while shares u of the compute units and m of the
memory bandwidth are taken, max(a / (1 - u), c / (1 - m)) times longer: compute-bound and
memory-bound kernels slow differently. A kernel of no time is not slowed (1); one that needs a
resource wholly taken waits (inf).
"""

from __future__ import annotations

import numpy as np


def stretch(a, c, units, memory):
    """The roofline stretch (module doc), elementwise over arrays (or scalars) that broadcast.

    Parameters
    ----------
    a, c : float or float array
        Compute time and memory time over roofline time, in [0, 1].
    units, memory : float or float array
        Shares of the compute units and memory bandwidth taken, in [0, 1].

    Returns
    -------
    float array
        max(a / (1 - units), c / (1 - memory)); 1 where a = c = 0; inf where a needed resource is
        wholly taken.

    Examples
    --------
    >>> stretch([1.0, 0.25, 0.0], [0.5, 1.0, 0.0], 0.5, 0.2).tolist()   # compute-, memory-bound, no time
    [2.0, 1.25, 1.0]
    """
    a, c = np.asarray(a, float), np.asarray(c, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.maximum(np.where(a > 0, a / (1.0 - np.asarray(units, float)), 0.0),
                       np.where(c > 0, c / (1.0 - np.asarray(memory, float)), 0.0))
    return np.where((a > 0) | (c > 0), s, 1.0)


def stretch_one(a: float, c: float, units: float, memory: float) -> float:
    """`stretch` for one kernel, in plain floats (the analytical engine's event loop).

    Parameters
    ----------
    a, c : float
        Compute time and memory time over roofline time.
    units, memory : float
        Shares taken.

    Returns
    -------
    float

    Examples
    --------
    >>> stretch_one(0.25, 1.0, 0.5, 0.2), stretch_one(1.0, 0.0, 1.0, 0.0)
    (1.25, inf)
    """
    if a <= 0 and c <= 0:
        return 1.0
    fa = 0.0 if a <= 0 else (a / (1.0 - units) if units < 1 else float("inf"))
    fc = 0.0 if c <= 0 else (c / (1.0 - memory) if memory < 1 else float("inf"))
    return max(fa, fc)
