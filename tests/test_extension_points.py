"""What adding each kind of extension costs, measured by toy additions (issue 41, item 6).

Each toy below is written here as its own file would be written in the library, registered with
the project's own registration call, used through the public entry points, and priced against a
closed form written here. docs/architecture.md's table "Where each kind of extension goes (files to
touch)" gives the counts measured here; a fixture puts every registry back as it was (same entries,
same order), so no other test sees a toy.

Notation: S bytes, B bytes/s per link and direction, a seconds per link.

- a collective algorithm (`toy_pairs`): one descriptor, `registry.register(ALGORITHM)`;
- a topology family (`toyline`): one `TopologyFamily`, `spec._register(FAMILY)` (a private name: the
  registry has no public register call);
- a network model (`toy-fixed`): one class, `model.register(ModelEntry(...))`;
- a reproduction (`toy`): one `Experiment`, `experiments.register(EXPERIMENT)`;
- a flow plan: tests/test_flow_plans.py's toy plan (`register_plan`), not repeated here;
- a step form (`toy-swap`): one class answering `StepForm`, `register_form(CLASS)` (the
  `@register_form` line of ir/NAME.py); it answers the sampled check and the byte counts from its
  rule, never listed (`test_a_toy_step_form_is_checked_from_its_rule_without_listing`).
"""

from __future__ import annotations

import csv
import json
import pickle
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from pydantic import Field

from fabricsim.cli import main
from fabricsim.collective_job import run_collective
from fabricsim.collectives import registry
from fabricsim.collectives._common import require_collective, require_group
from fabricsim.collectives.algorithm import Algorithm
from fabricsim.collectives.api import build_schedule
from fabricsim.ir import FORMS, Schedule, StatedOnce, make_step, register_form
from fabricsim.collectives.sizing import estimate_blocks
from fabricsim.collectives.verify import verify
from fabricsim.errors import ConfigError, ScheduleError, UnsupportedGroupSize
from fabricsim.experiments import EXPERIMENTS, Experiment
from fabricsim.experiments import register as register_experiment
from fabricsim.limits import raised_limits
from fabricsim.network import model as net_model
from fabricsim.network.model import ModelEntry, get_network_model, time_collective
from fabricsim.topology import spec as topo_spec
from fabricsim.topology.builders.direct import from_edges
from fabricsim.topology.family import Int, LinkValues, Params, TopologyFamily, parse_flags, single_n
from fabricsim.topology.graph import Topology
from fabricsim.topology.spec import build_topology, parse_topology

B, A = 50e9, 100e-9  # "50GB/s", "100ns"
S = float(2**20)  # "1MiB"


REGISTRIES = (registry.ALGORITHMS, registry._ALIASES, topo_spec.FAMILIES, topo_spec._ALIASES,
              net_model.NETWORK_MODELS, net_model._ALIASES, EXPERIMENTS)
"""Every table a toy's registration call writes into (the aliases too)."""


@contextmanager
def _restoring():
    """Put back every registry a toy registers into: the same entries in the same order."""
    saved = [dict(t) for t in REGISTRIES]
    try:
        yield
    finally:
        for t, s in zip(REGISTRIES, saved):
            t.clear()
            t.update(s)


@pytest.fixture
def restored():
    with _restoring():
        yield


# ---- a collective algorithm: what collectives/toy_pairs.py would hold ---------------------------------


def toy_pairs(collective: str, p: int) -> Schedule:
    """All-reduce on an even group, whole buffers along a two-level tree of pairs: odd rank 2k+1 adds
    into 2k; ranks 2k (k >= 1) add into 0; 0 sends the sum back to them; 2k sends it to 2k+1
    (the middle two steps vanish for p = 2). Called directly, it refuses what it cannot run itself
    (tests/test_registry.py calls every registered builder on unsupported sizes)."""
    require_collective("toy_pairs", collective, ("all-reduce",))
    require_group("toy_pairs", collective, p)
    if p % 2:
        raise UnsupportedGroupSize("toy_pairs", collective, p, "accepted: an even number of ranks")
    odd, even = np.arange(1, p, 2), np.arange(0, p, 2)
    zero = np.zeros(len(even) - 1, np.int64)
    steps = [make_step(odd, odd - 1, np.zeros(p // 2, np.int64), True)]
    if p > 2:
        steps += [make_step(even[1:], zero, zero, True), make_step(zero, even[1:], zero, False)]
    steps.append(make_step(even, even + 1, np.zeros(p // 2, np.int64), False))
    return Schedule(collective, "toy_pairs", p, 1, tuple(steps))


def _toy_pairs_check(collective: str, p: int, options: dict) -> str | None:
    return None if p % 2 == 0 else "accepted: an even number of ranks"


def _toy_pairs_estimate(collective: str, p: int, options: dict) -> float:
    return 2.0 * p - 2  # one entry per transfer: p/2 + (p/2 - 1) + (p/2 - 1) + p/2


TOY_PAIRS = Algorithm(
    "toy_pairs", toy_pairs, ("all-reduce",), "even p >= 2",
    "toy_pairs: pairs fold, their leaders fold into rank 0, the sum goes back the same way",
    aliases={"toy_tree_of_pairs": {}},
    check=_toy_pairs_check,
    estimate=_toy_pairs_estimate,
)


@pytest.fixture
def toy_algorithm(restored):
    registry.register(TOY_PAIRS)  # the one registration line
    return TOY_PAIRS


@pytest.mark.parametrize("p", [2, 4, 6, 8, 10, 32])
def test_a_toy_algorithm_verifies_and_states_its_estimate(toy_algorithm, p):
    s = toy_pairs("all-reduce", p)
    rep = verify(s, seed=p)
    assert (rep.steps, rep.transfers, rep.blocks_checked) == (2 if p == 2 else 4, 2 * p - 2, 1)
    # the estimate the `blocks` limit reads is the toy's, and exact here
    assert estimate_blocks("toy_pairs", "all-reduce", p, {}) == 2 * p - 2 == s.stored_entries
    with pytest.raises(UnsupportedGroupSize, match="even number of ranks"):
        toy_pairs("all-reduce", p + 1)
    with pytest.raises(ScheduleError):  # verify checks: without its last step the odd ranks lack the sum
        verify(Schedule("all-reduce", "toy_pairs", p, 1, s.steps[:-1]))


def test_a_toy_algorithm_is_priced_through_the_public_entry_points(toy_algorithm, capsys):
    # switch:4, every path NPU -> switch -> NPU (2a): the 4 steps move one whole buffer over each
    # link they use, the sends into (and out of) rank 0 one at a time: 4 (S/B + 2a)
    head, rows = run_collective("switch:4", "50GB/s", "100ns", "all-reduce", "toy_pairs", "1MiB,1GiB", "analytical")
    assert (head["algorithm"], head["steps"], head["verified"]["blocks_checked"]) == ("toy_pairs", 4, 1)
    for row in rows:
        assert row["time_s"] == pytest.approx(4 * (row["size_bytes"] / B + 2 * A), rel=1e-12)
    # ring:4 (both directions; a half-way tie goes +): pairs one hop, 2 -> 0 via 3 and 0 -> 2 via 1:
    # 4 S/B + (1 + 2 + 2 + 1) a
    _, rows = run_collective("ring:4", "50GB/s", "100ns", "all-reduce", "toy_tree_of_pairs", "1MiB", "analytical")
    assert rows[0]["time_s"] == pytest.approx(4 * S / B + 6 * A, rel=1e-12)
    # switch:8: rank 0 takes 3 buffers in (and sends 3 out) over its one link: 2 (S/B + 2a) + 2 (3 S/B + 2a)
    _, rows = run_collective("switch:8", "50GB/s", "100ns", "all-reduce", "toy_pairs", "1MiB", "analytical")
    assert rows[0]["time_s"] == pytest.approx(8 * S / B + 8 * A, rel=1e-12)
    # what it declares is enforced by the shared paths: an odd group, another collective, the limit
    with pytest.raises(UnsupportedGroupSize, match="even number of ranks"):
        run_collective("ring:5", "50GB/s", "100ns", "all-reduce", "toy_pairs", "1MiB", "analytical")
    with pytest.raises(ConfigError, match="toy_pairs supports: all-reduce"):
        run_collective("ring:4", "50GB/s", "100ns", "all-gather", "toy_pairs", "1MiB", "analytical")
    with raised_limits(blocks=2 * 8 - 3), pytest.raises(ConfigError, match="it needs 14 schedule entries"):
        build_schedule(parse_topology("ring:8"), "all-reduce", "toy_pairs")
    # the command line lists it and runs it
    assert main(["algorithms"]) == 0
    assert any(ln.startswith("toy_pairs ") and "all-reduce" in ln for ln in capsys.readouterr().out.splitlines())
    assert main(["collective", "-t", "switch:4", "-B", "50GB/s", "-L", "100ns", "-a", "toy_pairs", "-s", "1MiB",
                 "-q", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["time_s"] == pytest.approx(4 * (S / B + 2 * A), rel=1e-12)


# ---- a topology family: what topology/builders/toyline.py would hold ------------------------------------


class ToyLineParams(Params):
    """toyline's parameters: n NPUs, >= 2."""

    n: Int = Field(ge=2)


def _toyline_parse(spec: str, shape: str, opts: list[str]) -> dict:
    parse_flags(opts, set(), spec)
    return {"n": single_n(shape, spec)}


def _toyline_build(p: ToyLineParams, bandwidth: LinkValues, latency: LinkValues) -> Topology:
    i = np.arange(p.n - 1)
    return from_edges(i, i + 1, n_npus=p.n, name=f"toyline:{p.n}", bandwidth=bandwidth.one(), latency=latency.one())


TOYLINE = TopologyFamily("toyline", "toyline:4", "a line of N NPUs, fewest-hop routing", ToyLineParams,
                         _toyline_parse, _toyline_build, size=lambda p: (p.n, 2 * (p.n - 1)),
                         table=lambda p: p.n * p.n)


@pytest.fixture
def toy_family(restored):
    topo_spec._register(TOYLINE)  # the one registration line (a private name)
    return TOYLINE


@pytest.mark.parametrize("n", [2, 4, 7])
def test_a_toy_topology_family_is_built_and_priced(toy_family, n):
    t = parse_topology(f"toyline:{n}", "50GB/s", "100ns")
    assert (t.name, t.n_npus, t.n_links) == (f"toyline:{n}", n, 2 * (n - 1))
    assert build_topology("toyline", n=n, bandwidth="50GB/s", latency="100ns").n_links == 2 * (n - 1)
    # a one-way ring all-reduce on a line: 2 (n - 1) steps of S/n per transfer; the wrap-around
    # n-1 -> 0 takes the n - 1 backward links, which no other transfer uses: 2 (n - 1) ((n - 1) a + S/(n B))
    _, rows = run_collective(f"toyline:{n}", "50GB/s", "100ns", "all-reduce", "ring", "1MiB,1GiB", "analytical")
    for row in rows:
        assert row["time_s"] == pytest.approx(2 * (n - 1) * ((n - 1) * A + row["size_bytes"] / (n * B)), rel=1e-12)


def test_a_toy_topology_family_takes_the_shared_checks(toy_family, capsys):
    with pytest.raises(ConfigError, match="unknown option 'wrap'"):
        parse_topology("toyline:4,wrap")
    with pytest.raises(ConfigError, match="at least 2 NPUs"):
        parse_topology("toyline:1")
    # sized by its `size` and `table` before anything is built: the n x n routing table is the limit
    # exceeded by the largest factor
    with pytest.raises(ConfigError, match=f"it needs {70000**2:,} routing-table entries"):
        parse_topology("toyline:70000")
    assert main(["topologies"]) == 0
    assert any(ln.startswith("toyline") for ln in capsys.readouterr().out.splitlines())


# ---- a network model: what network/toy_fixed.py would hold -----------------------------------------------


@dataclass(frozen=True)
class _FixedCost:
    n_steps: int
    step: float

    def times(self, sizes) -> np.ndarray:
        return np.full(np.shape(np.atleast_1d(sizes)), self.n_steps * self.step)

    def phase_times(self, size: float) -> np.ndarray:
        return np.full(self.n_steps, self.step)


@dataclass(frozen=True)
class ToyFixedModel:
    """Every lock-step step costs `step` seconds, whatever it moves."""

    step: float = 1e-6
    name: ClassVar[str] = "toy-fixed"
    shares_links: ClassVar[bool] = False
    streams: ClassVar[bool] = False

    def collective(self, topo, schedule, injection=None) -> _FixedCost:
        return _FixedCost(schedule.n_steps, self.step)

    def p2p(self, topo, src, dst, size) -> float:
        return self.step

    def flows(self, topo, flows, record_timeline=False):
        raise NotImplementedError("toy-fixed prices collectives only")


@pytest.fixture
def toy_model(restored):
    net_model.register(ModelEntry("toy-fixed", ToyFixedModel, "every step costs a fixed time",
                                  ("toy",)))  # the one registration line
    return ToyFixedModel


@pytest.mark.parametrize("topology, algorithm, steps", [("ring:4", "ring", 2 * 3), ("switch:8", "direct", 2),
                                                        ("torus:4x4", "swing", 2 * 4)])
def test_a_toy_network_model_prices_through_the_public_entry_points(toy_model, topology, algorithm, steps):
    # ring: 2 (p - 1) steps; direct: reduce-scatter + all-gather; swing: 2 log2 p
    _, rows = run_collective(topology, "50GB/s", "100ns", "all-reduce", algorithm, "1KiB,1GiB", "toy-fixed")
    assert [r["time_s"] for r in rows] == pytest.approx([steps * 1e-6] * 2, rel=1e-12)
    topo = parse_topology(topology)
    s = build_schedule(topo, "all-reduce", algorithm)
    assert time_collective(topo, s, [S], "toy", step=2e-6)[0] == pytest.approx(steps * 2e-6, rel=1e-12)
    assert get_network_model("toy-fixed").collective(topo, s).phase_times(S).sum() == pytest.approx(steps * 1e-6)


def test_a_toy_network_model_is_listed_and_chosen_by_configs(toy_model, capsys):
    from fabricsim.network.model import canonical_model_name

    assert canonical_model_name("Toy_Fixed") == "toy-fixed"  # what configs and traffic files validate with
    assert main(["models"]) == 0
    assert "toy-fixed" in capsys.readouterr().out
    assert main(["collective", "-t", "ring:8", "-a", "ring", "-s", "1MiB", "-m", "toy", "-q", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["time_s"] == pytest.approx(2 * 7 * 1e-6, rel=1e-12)


# ---- a reproduction: what experiments/toy/ (and configs/toy.yaml) would hold ------------------------------


@dataclass(frozen=True)
class ToyPoint:
    n: int
    size: int


def toy_evaluate(point: ToyPoint) -> dict:
    """A ring all-reduce on ring:n, on the analytical model."""
    _, rows = run_collective(f"ring:{point.n}", "50GB/s", "100ns", "all-reduce", "ring", str(point.size),
                             "analytical", check=False)
    return {"n": point.n, "size_bytes": point.size, "time_s": rows[0]["time_s"]}


def _toy_load(path) -> dict:
    if path is None:
        return {"ranks": [4, 8], "size": 2**20}  # a real study ships configs/toy.yaml
    import yaml

    return yaml.safe_load(Path(path).read_text())


def _toy_write(rep: dict, out: Path) -> list:
    path = Path(out) / "toy.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, ["n", "size_bytes", "time_s"])
        w.writeheader()
        w.writerows(rep["rows"])
    return [path]


def _toy_points(cfg: dict, quick: bool) -> list:
    return [ToyPoint(n, cfg["size"]) for n in cfg["ranks"][: 1 if quick else None]]


def _toy_summarize(cfg, pts, rows, quick, elapsed) -> dict:
    return {"rows": rows}


def _toy_render(rep: dict, con, files) -> None:
    for r in rep["rows"]:
        con.print(f"ring:{r['n']} {r['time_s']:.6e}")


def _toy_to_json(rep: dict) -> dict:
    return dict(rep)


def _toy_label(point: ToyPoint) -> str:
    return f"ring:{point.n}"


TOY_STUDY = Experiment(
    name="toy", summary="ring all-reduce on rings", quick_help="the first ring only", load_config=_toy_load,
    points=_toy_points, evaluate=toy_evaluate, summarize=_toy_summarize, write=_toy_write, render=_toy_render,
    to_json=_toy_to_json, default_out=Path("out/toy"), label=_toy_label,
)


@pytest.fixture
def toy_study(restored):
    return register_experiment(TOY_STUDY)  # the one registration line


def _ring(n: int, size: float) -> float:
    return 2 * (n - 1) * (A + size / (n * B))


def test_a_toy_reproduction_runs_as_a_command(toy_study, tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["reproduce", "toy", "--json", "--out", str(out)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [r["n"] for r in got["rows"]] == [4, 8] and got["files"] == [str(out / "toy.csv")]
    for r in got["rows"]:
        assert r["time_s"] == pytest.approx(_ring(r["n"], S), rel=1e-12)
    with (out / "toy.csv").open() as f:
        assert [float(r["time_s"]) for r in csv.DictReader(f)] == pytest.approx([_ring(4, S), _ring(8, S)], rel=1e-12)
    cfg = tmp_path / "toy.yaml"
    cfg.write_text("ranks: [16, 2]\nsize: 1073741824\n")
    assert main(["reproduce", "toy", "--quick", "--config", str(cfg), "--out", str(tmp_path / "q"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["n"] for r in rows] == [16] and rows[0]["time_s"] == pytest.approx(_ring(16, 2.0**30), rel=1e-12)
    assert main(["reproduce", "--help"]) == 0 and "toy" in capsys.readouterr().out
    # what every registered study must do (tests/test_experiments.py): its points and itself pickle
    pts = TOY_STUDY.points(TOY_STUDY.load_config(None), True)
    assert pickle.loads(pickle.dumps(pts)) == pts and pickle.loads(pickle.dumps(TOY_STUDY)) == TOY_STUDY


# ---- the registries are put back ----------------------------------------------------------------------------


def test_the_toys_leave_no_trace():
    before = [list(t.items()) for t in REGISTRIES]
    with _restoring():
        registry.register(TOY_PAIRS)
        topo_spec._register(TOYLINE)
        net_model.register(ModelEntry("toy-fixed", ToyFixedModel, "every step costs a fixed time", ("toy",)))
        register_experiment(TOY_STUDY)
        registry.ALGORITHMS.pop("ring")  # even an entry taken out comes back, in its place
        assert registry.choose_algorithm("toy_tree_of_pairs").name == "toy_pairs"
        assert parse_topology("toyline:3").n_links == 4 and get_network_model("toy").name == "toy-fixed"
    assert [list(t.items()) for t in REGISTRIES] == before
    with pytest.raises(ConfigError, match="accepted: "):
        registry.choose_algorithm("toy_pairs")
    with pytest.raises(ConfigError, match="accepted: "):
        parse_topology("toyline:4")
    with pytest.raises(ConfigError, match="accepted: congestion-aware"):
        get_network_model("toy-fixed")
    assert "toy" not in EXPERIMENTS


# ---- a step form: what ir/toy_swap.py would hold, and its `@register_form` line ---------------------


@dataclass(frozen=True, eq=False)
class ToySwapStep(StatedOnce):
    """Every pair (2k, 2k+1) of p (even) nodes swaps whole buffers (block 0) and adds them in: stated
    by p alone. It answers from its rule what the sampled check and the byte counts ask (the
    `StepForm` protocol); every other question reads its listed form (`explicit`), the definition."""

    p: int
    _cache: dict = field(default_factory=dict, init=False, repr=False)

    form: ClassVar[str] = "toy-swap"

    def explicit(self):
        if "step" not in self._cache:
            src = np.arange(self.p)
            self._cache["step"] = make_step(src, src ^ 1, np.zeros(self.p, np.int64), True)
        return self._cache["step"]

    n_transfers = property(lambda self: self.p)
    n_moves = property(lambda self: self.p)
    stored_entries = property(lambda self: 1)

    def structure_problem(self, n_nodes):
        return f"transfer names a node outside 0..{n_nodes - 1}" if self.p > n_nodes else None

    def first_bad_rep(self, nblocks):
        return 0 if nblocks < 1 else None

    def sampled_moves(self, sample, reps):
        """Node i sends block 0 to i ^ 1, adding it in: every transfer carries block 0 if sampled."""
        t = np.arange(self.p) if len(sample) and sample[0] == 0 else np.zeros(0, np.int64)
        z = np.zeros(len(t), np.int64)
        return z, t, t ^ 1, np.ones(len(t), bool), z, t

    def add_node_sums(self, block_frac, side, factors, out, reduce_only=False):
        x = block_frac
        for f in factors:
            x = x * f
        out[: self.p] += x  # one block sent and one received by every node
        return out


@pytest.fixture
def toy_form():
    """`@register_form` on ToySwapStep, undone afterwards (FORMS as it was)."""
    saved = dict(FORMS)
    register_form(ToySwapStep)
    try:
        yield ToySwapStep
    finally:
        FORMS.clear()
        FORMS.update(saved)


@pytest.mark.parametrize("model", ["congestion-aware", "congestion-unaware", "flow"])
def test_a_toy_step_form_is_verified_and_priced(toy_form, model):
    """A form in one file with one registration is verified and priced correctly by every reader:
    the protocol's answers where it gives them, its listed form elsewhere (a network model's faster
    lowering is one more module registering itself: `register_step_router`, `lowering.quotient.lowers`)."""
    assert FORMS["toy-swap"] is ToySwapStep
    s = Schedule("all-reduce", "toy-swap", 2, 1, (ToySwapStep(2),))
    assert verify(s).blocks_checked == 1
    assert s.bytes_sent(S).tolist() == [S, S]  # each node sends its whole buffer once
    topo = parse_topology("ring:2", "50GB/s", "100ns")
    t = time_collective(topo, s.placed([0, 1]), [S], model)[0]
    assert t == pytest.approx(S / B + A, rel=1e-9)  # one hop each way, one whole buffer per link


def test_a_toy_step_form_is_checked_from_its_rule_without_listing(toy_form, monkeypatch):
    """The sampled check and the byte counts ask the form, never its listed form; a wrong rule shows."""
    monkeypatch.setattr(ToySwapStep, "explicit", lambda self: pytest.fail("the toy form was listed"))
    assert verify(Schedule("all-reduce", "toy-swap", 2, 1, (ToySwapStep(2),)), sample=1).blocks_checked == 1
    six = Schedule("all-reduce", "toy-swap", 6, 1, (ToySwapStep(6),))  # not an all-reduce: counted, not verified
    assert six.bytes_received(S).tolist() == [S] * 6 and six.n_transfers == 6
    with pytest.raises(ScheduleError, match="node outside 0..1"):
        verify(Schedule("all-reduce", "toy-swap", 2, 1, (ToySwapStep(4),)), sample=1)
