"""Per-layer breakdown of a training run: each layer's compute and exposed communication per
iteration (`layers.csv`).

A task belongs to the layer its label names. The workload builders label tasks
`[F|B]<microbatch> <layer>[.attn|.mlp][ <what>]` (zoo models), `<layer> fwd|wg|ig[ <COLLECTIVE>]`
(ASTRA-sim text workloads) or with the trace's node names (Chakra); `layer_of` strips the
microbatch prefix, the block part and the suffix naming what the task does (wg, ig, the
collective, `weights in`, ...). Pipeline transfers (`activation 0->1`, `gradient 1->0`) belong to
no layer and count as "(pipeline)", input loading as "(input)"; a data-parallel bucket keeps its
name (`block95..block90`): its collective serves all those layers at once.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np

from ..engine.result import TrainResult
from ..vocab import CATEGORIES, TaskKind

_MICROBATCH = re.compile(r"^[FBR]\d+ ")  # forward, backward, recompute of microbatch n
_PIPELINE = re.compile(r"^(?:activation|gradient) \d+->\d+$")
_WHAT = re.compile(r"(?: (?:MP|DP|PP|IO|other) (?:all-reduce|reduce-scatter|all-gather|all-to-all)"
                   r"| (?:gradient )?all-to-all| (?:fwd|wg|ig)(?: [A-Z]+)?| weights in| gradients out"
                   r"| lookup| update| core)$")
_PART = re.compile(r"\.(?:attn|mlp)$")
LAYER_COLUMNS = ("compute",) + CATEGORIES  # compute time, then exposed communication per category


def layer_of(label: str) -> str:
    """The layer a task label names (module doc).

    Parameters
    ----------
    label : str
        A task label (`WorkloadGraph.name`).

    Returns
    -------
    str
        The layer name, "(pipeline)" or "(input)".

    Examples
    --------
    >>> [layer_of(x) for x in ("F3 block7.attn MP all-reduce", "B0 layer1.0.conv1 wg", "F1 activation 0->1",
    ...                        "block95..block90 DP all-reduce", "MLP_Top_0 fwd ALLTOALL", "embedding lookup",
    ...                        "R2 block4.attn core", "B0 block4.mlp ig LN")]
    ['block7', 'layer1.0.conv1', '(pipeline)', 'block95..block90', 'MLP_Top_0', 'embedding', 'block4', 'block4']
    """
    s = _MICROBATCH.sub("", label)
    if _PIPELINE.match(s):
        return "(pipeline)"
    if s == "input load":
        return "(input)"
    return _PART.sub("", _WHAT.sub("", s))


def layer_breakdown(res: TrainResult) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Per iteration and layer: compute and exposed communication per category, mean over NPUs.

    Each second of an NPU counted as compute or as exposed communication (`TrainResult.
    iteration_split`) goes to the layer of the task it is attributed to; values are the sum over
    NPUs divided by the number of NPUs, so per iteration the layers add up to the breakdown's
    mean over NPUs (`breakdown.csv`).

    Parameters
    ----------
    res : TrainResult
        The run.

    Returns
    -------
    layers : list of str
        Layer names in the order their first task appears.
    values : float array
        [iteration, layer, column] seconds per iteration, columns `LAYER_COLUMNS`.
    npus : int array
        NPUs that run each layer's compute tasks.
    """
    g = res.graph
    names = [layer_of(x) for x in g.labels]
    order: dict[str, int] = {}
    for lab in g.label.tolist():  # first appearance, in task order
        order.setdefault(names[lab], len(order))
    layer_of_label = np.array([order.get(n, -1) for n in names], dtype=np.int64)
    layer = layer_of_label[g.label]
    col = np.where(g.kind == TaskKind.COMPUTE, 0, 1 + g.category.astype(np.int64))
    sp = res.iteration_split
    ts = sp.tasks
    n_it, n_l, n_c = sp.per_npu.shape[0], len(order), len(LAYER_COLUMNS)
    idx = (ts.window * n_l + layer[ts.task]) * n_c + col[ts.task]
    values = np.bincount(idx, weights=ts.seconds, minlength=n_it * n_l * n_c).reshape(n_it, n_l, n_c)
    comp = g.kind == TaskKind.COMPUTE
    pairs = np.unique(np.stack([layer[comp], g.npu[comp]]), axis=1) if comp.any() else np.zeros((2, 0), np.int64)
    npus = np.bincount(pairs[0], minlength=n_l) * g.copies  # a folded NPU stands for its copies
    return list(order), values / max(g.n_npus, 1), npus


def write_layers_csv(res: TrainResult, path: str | Path) -> Path:
    """One row per iteration and layer (`layer_breakdown`): columns `iteration` (from 1), `layer`,
    `npus` (NPUs running its compute), `compute_s` and exposed `MP_s`, `PP_s`, `DP_s`, `IO_s`,
    `other_s` (s per iteration, mean over all NPUs).

    Parameters
    ----------
    res : TrainResult
        The run.
    path : str or Path
        The CSV file (its folder is created).

    Returns
    -------
    Path
        `path`.
    """
    layers, values, npus = layer_breakdown(res)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["iteration", "layer", "npus"] + [f"{c}_s" for c in LAYER_COLUMNS])
        for it in range(values.shape[0]):
            for i, name in enumerate(layers):
                w.writerow([it + 1, name, int(npus[i])] + [repr(float(v)) for v in values[it, i]])
    return path
