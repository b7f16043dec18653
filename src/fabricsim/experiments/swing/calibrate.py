"""The model's two derived quantities: a node's injection bound from the NIC (`injection_Bps`) and
the per-step overhead alpha inferred from ONE labelled runtime (`step_overhead`).

NIC (configs/swing.yaml, `network`; values from the SST artifact's configuration): a node's NIC
feeds every packet onto one NIC-router link of `nic_injection` bytes/s; each of its 2D send
machines (one per port collective) spends `packet_overhead` s per `packet_size`-byte packet. The
node therefore injects at most min(nic_injection, 2D x packet_size / packet_overhead) bytes/s
for a collective; the analytical model makes a step last at least the bytes a node sends in it
over that rate (`network.analytical`'s `injection`).

Per-step overhead: every schedule here is lock-step without lanes for Swing, so Swing's time at a
size is linear in alpha, T_v(alpha) = T_v(0) + k_v alpha (k_v = its steps) for each variant v, and
Swing's curve is min_v T_v. The alpha that puts that minimum on the label is max_v (label -
T_v(0)) / k_v (each T_v rises with alpha, so the variant that is fastest at the answer is the one
whose own solution is largest). The label is reproduced by construction and is not a check.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...errors import ConfigError
from .config import Shape, SwingConfig, Variant


def injection_Bps(cfg: SwingConfig, shape: Shape) -> float | None:
    """What a node of `shape` can inject for one collective.

    Parameters
    ----------
    cfg : SwingConfig
    shape : Shape

    Returns
    -------
    float or None
        Bytes/s: min(NIC injection, 2D x packet_size / packet_overhead), None when the config
        gives neither bound.
    """
    bounds = []
    if cfg.nic_injection_Bps is not None:
        bounds.append(cfg.nic_injection_Bps)
    if cfg.packet_size_B is not None and cfg.packet_overhead_s:
        bounds.append(2 * shape.D * cfg.packet_size_B / cfg.packet_overhead_s)
    return min(bounds) if bounds else None


def step_overhead(cfg: SwingConfig) -> float:
    """The per-step overhead alpha of a config: its value, or the one inferred from its label.

    Parameters
    ----------
    cfg : SwingConfig

    Returns
    -------
    float
        Seconds per lock-step step; ConfigError when the label is below what the network alone
        takes (no alpha >= 0 reaches it).
    """
    if cfg.step_overhead_from is None:
        return float(cfg.step_overhead_s)
    shape_name, key, label_s = cfg.step_overhead_from
    shape = cfg.shape(shape_name)
    entry = next(e for e in cfg.algorithms if e.key == key)
    return _infer(shape, entry.variants, cfg.link_bandwidth_Bps, cfg.hop_latency_s, cfg.model,
                  injection_Bps(cfg, shape), float(label_s), f"{shape_name}/{key}")


@lru_cache(maxsize=16)
def _infer(shape: Shape, variants: tuple[Variant, ...], bw: float, hop_s: float, model: str,
           injection: float | None, label_s: float, what: str) -> float:
    """alpha (s) such that the fastest variant's 32 B time on `shape` equals `label_s`."""
    from ...collectives.api import build_schedule
    from ...network.model import get_network_model

    topo = shape.build(bw, hop_s)
    zero = get_network_model(model, step_overhead=0.0)
    unit = get_network_model(model, step_overhead=1e-6)
    best = -np.inf
    for v in variants:
        s = build_schedule(topo, "all-reduce", v.algorithm, **v.options_dict)
        t0 = float(zero.collective(topo, s, injection=injection).times([32.0])[0])
        k = (float(unit.collective(topo, s, injection=injection).times([32.0])[0]) - t0) / 1e-6
        best = max(best, (label_s - t0) / k)
    if not best >= 0:
        raise ConfigError("calibration.step_overhead_from", what,
                          f"the label ({label_s * 1e6:g} us) is below the network's own latency; accepted: a label "
                          "that a per-step overhead >= 0 reaches")
    return float(best)
