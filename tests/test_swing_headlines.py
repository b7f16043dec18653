"""The Swing reproduction's NIC bound, its one inferred constant and its headline table.

Expected values are closed forms written here: rank-order rings and per-dimension rings
(`hierarchical`) as stand-ins whose times are sums over steps, and the 32 B times of Swing-L and
recursive doubling-L on one port of an 8x8 torus (steps, hops and per-link message counts
counted by hand below).
"""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.collectives import registry
from fabricsim.errors import ConfigError
from fabricsim.experiments import EXPERIMENTS
from fabricsim.experiments import swing as ex
from fabricsim.experiments.swing.calibrate import injection_Bps

from test_swing_reproduce import HOP, B, hier_time_8x8, ring_time, stand_in_config

ALPHA = 0.5e-6  # s, a stand-in per-step overhead
PAPER_ALGS = all(a in registry.ALGORITHMS for a in ex.PAPER_ALGORITHMS)
needs_paper_algs = pytest.mark.skipif(not PAPER_ALGS, reason="the paper's algorithms are not registered")


def _cfg(**network) -> dict:
    d = stand_in_config()
    d["network"]["step_overhead"] = f"{ALPHA * 1e6}us"
    d["network"].update(network)
    return d


def _err(d) -> str:
    with pytest.raises(ConfigError) as e:
        ex.parse_config(d, "swing.yaml")
    assert "\n" not in str(e.value)
    return str(e.value)


# ---- the NIC bound ---------------------------------------------------------------------------


def test_injection_bound_is_the_smaller_of_nic_and_send_machines():
    """min(NIC, 2D x packet_size / packet_overhead): 2-D 8x8 -> 4 send machines."""
    cfg = ex.parse_config(_cfg(nic_injection="100Gbps", packet_size="8KiB", packet_overhead="1us"))
    assert injection_Bps(cfg, cfg.shape("8x8")) == pytest.approx(min(100e9 / 8, 4 * 8192 / 1e-6))
    assert injection_Bps(cfg, cfg.shape("4x4x4")) == pytest.approx(min(100e9 / 8, 6 * 8192 / 1e-6))
    assert injection_Bps(ex.parse_config(_cfg()), cfg.shape("8x8")) is None


def test_a_binding_nic_prices_each_step_at_the_node_rate():
    """Ring and per-dimension rings send one message per node and step: with a NIC slower than
    the link, each step's bytes go at the NIC's rate."""
    cfg = ex.parse_config(_cfg(nic_injection="100Gbps"))
    rep = ex.run(cfg, shapes=["8x8"])
    S = np.array(rep.case("8x8").sizes)
    nic = 100e9 / 8
    np.testing.assert_allclose(rep.case("8x8").entry("ring").times_s, ring_time(64, S, ALPHA, bw=nic), rtol=1e-12)
    np.testing.assert_allclose(rep.case("8x8").entry("hier").times_s, hier_time_8x8(S, ALPHA, bw=nic), rtol=1e-12)
    # the send machines bound it the same way: 4 x 8 KiB / 1.6 us = 20.48 GB/s < 50 GB/s links
    cfg = ex.parse_config(_cfg(packet_size="8KiB", packet_overhead="1.6us"))
    t = ex.run(cfg, shapes=["8x8"]).case("8x8").entry("ring").times_s
    np.testing.assert_allclose(t, ring_time(64, S, ALPHA, bw=4 * 8192 / 1.6e-6), rtol=1e-12)


def test_the_artifacts_nic_binds_at_none_of_the_papers_bandwidths():
    """12800 Gb/s and 8 KiB per ns per send machine exceed what 2D ports inject at the paper's
    fastest links: 4 x 3.2 Tb/s on 2-D tori, 8 x 400 Gb/s on 8x8x8x8."""
    cfg = ex.load_config()
    for shape in cfg.shapes:
        fastest = max(cfg.sweep_bandwidths) if shape.name == cfg.sweep_shape else cfg.link_bandwidth_Bps
        assert injection_Bps(cfg, shape) >= 2 * shape.D * fastest * (1 - 1e-12), shape.name


def test_nic_config_errors_are_one_line():
    d = _cfg(packet_size="8KiB")
    msg = _err(d)
    assert "network.packet_overhead" in msg and "together" in msg
    d = _cfg(nic_injection="0Gbps")
    assert "network.nic_injection" in _err(d)
    d = _cfg(packet_overhead="-1ns", packet_size="8KiB")
    assert "network.packet_overhead" in _err(d)


# ---- alpha from one label ------------------------------------------------------------------


def _calibrated(label_us: float) -> dict:
    d = stand_in_config()
    del d["network"]["step_overhead"]
    d["calibration"] = {"step_overhead_from": {"shape": "8x8", "entry": "hier"}}
    d["paper"]["runtime_32B_us"]["8x8"]["hier"] = label_us
    return d


def test_alpha_is_inferred_from_one_label_in_closed_form():
    """hier on 8x8 at 32 B: 28 (alpha + HOP) + 14 x 32 / (8 B) + 14 x 32 / (64 B) = label."""
    label = 25e-6
    want = (label - 28 * HOP - 14 * 32 / (8 * B) - 14 * 32 / (64 * B)) / 28
    cfg = ex.parse_config(_calibrated(25))
    rep = ex.run(cfg, shapes=["8x8"])
    assert rep.step_overhead_s == pytest.approx(want, rel=1e-12)
    assert rep.calibration_point == ("8x8", "hier") and rep.calibration_us == pytest.approx(25)
    S = np.array(rep.case("8x8").sizes)
    np.testing.assert_allclose(rep.case("8x8").entry("ring").times_s, ring_time(64, S, want), rtol=1e-12)
    assert rep.case("8x8").entry("hier").times_s[0] == pytest.approx(label, rel=1e-12)


def test_calibration_errors_are_one_line():
    d = _calibrated(25)
    d["network"]["step_overhead"] = "1us"
    assert "not both" in _err(d)
    d = _calibrated(25)
    d["calibration"]["step_overhead_from"]["shape"] = "9x9"
    assert "calibration.step_overhead_from.shape" in _err(d)
    d = _calibrated(25)
    del d["paper"]["runtime_32B_us"]["8x8"]["hier"]
    assert "paper.runtime_32B_us" in _err(d)
    d = stand_in_config()
    del d["network"]["step_overhead"]
    msg = _err(d)
    assert "network.step_overhead" in msg and "required" in msg
    cfg = ex.parse_config(_calibrated(1))  # 1 us < 28 hops x 400 ns: no alpha >= 0 reaches it
    with pytest.raises(ConfigError, match="below the network"):
        ex.run(cfg, shapes=["8x8"])


@needs_paper_algs
def test_swing_l_and_rd_l_on_one_port_at_32_bytes():
    """One port, whole vector, 6 steps on 8x8. Swing-L: distances 1, 1, 3 per dimension (10
    hops); its busiest directed link carries (delta + 1) / 2 messages: 1, 1, 1, 1, 2, 2 = 8.
    RD-L: distances 1, 2, 4 (14 hops); XOR 2 puts two messages on the middle link, XOR 4 (ties
    routed +) four: 2 (1 + 2 + 4) = 14 messages. alpha inferred from Swing's label predicts RD-L."""
    d = stand_in_config()
    cfg = ex.load_config()
    d["algorithms"] = [{"key": e.key, "label": e.label, "role": e.role,
                        "variants": [{"label": v.label, "algorithm": v.algorithm, "options": v.options_dict}
                                     for v in e.variants if v.label in ("Swing-L", "RD-L")]}
                       for e in cfg.algorithms if e.key in ("swing", "recdoub")]
    del d["network"]["step_overhead"]
    d["calibration"] = {"step_overhead_from": {"shape": "8x8", "entry": "swing"}}
    d["paper"]["runtime_32B_us"] = {"8x8": {"swing": 7, "recdoub": 8.7}}
    d["paper"]["goodput_gbps"] = []
    d["paper"]["table2"] = {}
    rep = ex.run(ex.parse_config(d), shapes=["8x8"])
    alpha = (7e-6 - 10 * HOP - 8 * 32 / B) / 6
    assert rep.step_overhead_s == pytest.approx(alpha, rel=1e-12)
    lat = {r.entry: r.ours_us for r in rep.latencies}
    assert lat["recdoub"] == pytest.approx((6 * alpha + 14 * HOP + 14 * 32 / B) * 1e6, rel=1e-12)
    rows = ex.headlines(rep)
    assert not any("32 B" in h.figure and "Swing" in h.figure for h in rows)  # the calibration point


# ---- the headline table ----------------------------------------------------------------------


def test_headline_rows_in_closed_form():
    """Stand-ins: hier (subject) vs ring. Peak speed-up = max over sizes of T_ring / T_hier
    (the gain's speed-up is monotone); the paper's is 1 + its largest gain."""
    d = _cfg()
    d["paper"]["fig7"]["8x8"] = [-70, 200]
    rep = ex.run(ex.parse_config(d), quick=True)
    rows = {h.figure: h for h in ex.headlines(rep)}
    S = np.array(rep.case("8x8").sizes)
    peak = rows["Fig. 7, 8x8: largest speed-up of Swing"]
    assert peak.paper == pytest.approx(3.0)
    assert peak.fabricsim == pytest.approx(np.max(ring_time(64, S, ALPHA) / hier_time_8x8(S, ALPHA)), rel=1e-12)
    bw = 100e9 / 8
    p100 = rows["Fig. 8, 8x8 at 100Gb/s: largest speed-up of Swing"]
    assert p100.paper == pytest.approx(2.5)
    assert p100.fabricsim == pytest.approx(np.max(ring_time(64, S, ALPHA, bw=bw) / hier_time_8x8(S, ALPHA, bw=bw)))
    worst = next(h for h in rows.values() if h.figure.startswith("Fig. 7, square tori: smallest"))
    two = np.array([32.0, 2.0**21])
    assert worst.paper == pytest.approx(1 / 1.7)
    assert worst.fabricsim == pytest.approx(np.min(ring_time(64, two, ALPHA) / hier_time_8x8(two, ALPHA)), rel=1e-12)
    sign = next(h for h in rows.values() if "sign" in h.figure)
    same = sum(1 for r in rep.gains if (r.ours_pct >= 0) == (r.paper_pct >= 0) or abs(r.paper_pct) <= 3)
    assert sign.paper == 1.0 and sign.fabricsim == pytest.approx(same / len(rep.gains))
    for h in rows.values():  # every miss names its cause
        assert h.within is not None
        assert bool(h.cause) == (not h.within), h.figure
    # shapes that did not run have no row
    assert not any("64x64" in f or "128x8" in f for f in rows)


def test_headlines_are_registered_for_reproduce():
    assert EXPERIMENTS["swing"].headlines is ex.headlines


@needs_paper_algs
def test_quick_headline_table_covers_the_quick_cases():
    cfg = ex.load_config()
    rep = ex.run(cfg, quick=True)
    rows = ex.headlines(rep)
    figs = [h.figure for h in rows]
    assert "Fig. 8, 8x8 at 3.2Tb/s: largest speed-up of Swing" in figs
    assert any(f.startswith("Fig. 10, 64x16") for f in figs)
    assert not any("128x128" in f or "hyperx" in f.lower() for f in figs)
    assert all(h.within is not None for h in rows)
