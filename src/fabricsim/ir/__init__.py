"""The schedule IR: a collective as lock-step steps of block transfers, below every algorithm and
network model.

- `step`: the listed step form (`Step`, `make_step`, `make_range_step`) and how steps run;
  `step_events`: where a listed step's blocks move, for the sampled verification;
- `form`: the `StepForm` protocol every form answers, and the registry of forms (`FORMS`);
- `mesh`, `composed`: the stated forms (every pair on the lines of a grid, the full mesh its one-line
  case; repetitions of other steps side by side: `compose_pipeline` builds a pipelined chain from them);
- `schedule`: the `Schedule`; `facts`: what an algorithm states about it (`Facts`);
- `compose`: phases in sequence, step lists side by side, lanes.

The package imports nothing of fabricsim above `vocab`: algorithms build on it, models read it.
"""

from .compose import align, in_lanes, lane_total, merge_steps, offset_nodes, parallel, sequence
from .composed import ComposedStep, compose_pipeline
from .facts import Facts
from .form import FORMS, StatedForm, StatedOnce, StepForm, register_form
from .mesh import FullMeshStep, LineMeshStep, MeshStep, ordered_pairs
from .schedule import Schedule
from .step import Step, make_range_step, make_step, rotate

__all__ = ["FORMS", "ComposedStep", "Facts", "FullMeshStep", "LineMeshStep", "MeshStep", "Schedule", "StatedForm", "StatedOnce",
           "Step", "StepForm", "align", "compose_pipeline", "in_lanes", "lane_total", "make_range_step", "make_step",
           "merge_steps", "offset_nodes", "ordered_pairs", "parallel", "register_form", "rotate", "sequence"]
