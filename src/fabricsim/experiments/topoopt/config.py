"""The TopoOpt reproduction's config (`configs/topoopt.yaml`): the servers, the fabrics, the search,
the prices and the paper's numbers, every value with its source or ASSUMPTION in the file.
Loaded through `fabricsim.config.load_yaml` (one-line errors naming the field)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from ...config import load_yaml
from ...errors import ConfigError
from ...optimize.job import SearchSection as Search
from ...optimize.job import _bw, _network_model, _Strict, _time
from ...optimize.job import ServerSection as Server
from ...optimize.job import WorkloadSection as Workload
from ...units import parse_bandwidth

DEFAULT_OUT = Path("out") / "topoopt"
FABRICS = ("topoopt", "ideal", "fat-tree", "fat-tree-cost", "fat-tree-2to1", "expander", "ocs")
"""The fabrics compared: TopoOpt; an ideal switch at d x B per server; full-bisection fat-trees at
d x B and at the cost-equivalent bandwidth; a 2:1 oversubscribed fat-tree at d x B; a random
d-regular expander of links B; an OCS reconfigured to the demand, with blackouts."""


def _bandwidths(field: str):
    """A validator of `link_bandwidths`: one bandwidth or a list, each with units."""
    return field_validator("link_bandwidths", mode="before")(
        lambda v: [parse_bandwidth(x, field) for x in (v if isinstance(v, list) else [v])])


class FatTree(_Strict):
    """The fat-tree baselines as built (two-level leaf/spine) and as priced."""

    leaf: int = Field(ge=1)
    tiers: int = Field(default=3, ge=2, le=3)
    oversubscribed: float = Field(default=2.0, gt=1)


class Ocs(_Strict):
    """OCS-reconfig: live for `live`, then dark for `reconfiguration` while it switches."""

    reconfiguration: float
    live: float
    _r = _time("reconfiguration")
    _l = _time("live")


class Demo(_Strict):
    """A paper figure: TopoOpt and the fat-tree on one workload at one (d, B)."""

    workload: str
    degree: int = Field(ge=2)
    bandwidth: float
    topoopt: float
    fat_tree: float
    _b = _bw("bandwidth")
    _t = _time("topoopt")
    _f = _time("fat_tree")


class Paper(_Strict):
    """The paper's numbers (spec §3.5)."""

    demo: list[Demo]
    max_speedup_v3: float = Field(gt=0)
    max_speedup_v1: float = Field(gt=0)


class Quick(_Strict):
    """The CI subset: a small cluster, and (`demo`) the paper's demo points at full size with the
    full search, so that `--quick` compares the demo's figures."""

    servers: int = Field(ge=2)
    workloads: list[str]
    degrees: list[int]
    link_bandwidths: list[float]
    fabrics: list[str]
    steps: int = Field(ge=0)
    rounds: int = Field(ge=1)
    demo: bool = True

    _bws = _bandwidths("quick.link_bandwidths")


class Example(_Strict):
    """The spec's worked example (n = 12, d = 4)."""

    n: int = Field(ge=2)
    d: int = Field(ge=2)


class TopoOptConfig(_Strict):
    """The whole reproduction config (configs/topoopt.yaml)."""

    name: str
    servers: int = Field(ge=2)
    server: Server
    latency: float
    network_model: str = "congestion-aware"
    degrees: list[int]
    link_bandwidths: list[float]
    fabrics: list[str]
    search: Search
    fat_tree: FatTree
    ocs: Ocs
    prices: dict = Field(default_factory=dict)
    workloads: dict[str, Workload]
    paper: Paper
    quick: Quick
    example: Example
    _lat = _time("latency")
    _m = field_validator("network_model", mode="before")(_network_model)

    _bws = _bandwidths("link_bandwidths")


def load_config(path: str | Path | None = None) -> TopoOptConfig:
    """Read and check the reproduction config.

    Parameters
    ----------
    path : str or Path, optional
        The YAML file (default configs/topoopt.yaml).

    Returns
    -------
    TopoOptConfig
        A one-line ConfigError (file, field, value, what is accepted) for bad input, including
        names that refer to no workload or fabric, unknown models and prices.
    """
    from ...optimize.cost import Prices
    from ...optimize.finder import ring_capacity
    from ..base import shipped_config

    path = path or shipped_config("topoopt.yaml", "a TopoOpt reproduction config")
    cfg = load_yaml(TopoOptConfig, path, "servers, server, fabrics, workloads")

    def known(field: str, names, pool) -> None:
        for name in names:
            if name not in pool:
                raise ConfigError(f"{path}: {field}", name, f"accepted: {', '.join(pool)}")

    known("fabrics", cfg.fabrics, FABRICS)
    known("quick.fabrics", cfg.quick.fabrics, FABRICS)
    known("quick.workloads", cfg.quick.workloads, cfg.workloads)
    known("paper.demo.workload", [d.workload for d in cfg.paper.demo], cfg.workloads)
    for field, n in (("servers", cfg.servers), ("quick.servers", cfg.quick.servers)):
        if n & (n - 1):
            raise ConfigError(f"{path}: {field}", n, "accepted: a power of two (strided placement)")
    for field, ds, n in (("degrees", cfg.degrees, cfg.servers), ("quick.degrees", cfg.quick.degrees, cfg.quick.servers)):
        for d in ds:
            if d < 2 or d % 2 or d > ring_capacity(n):
                raise ConfigError(f"{path}: {field}", d, f"accepted: even degrees 2..{ring_capacity(n)} on {n} servers "
                                                         "(rings both ways, each ring wired once)")
    Prices.from_mapping(cfg.prices, where=f"{path}: prices")
    return cfg
