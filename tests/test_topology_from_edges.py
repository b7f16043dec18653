"""`from_edges` (issue 12): the edges positional, everything else by keyword; units accepted;
one-line errors naming the parameter."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.errors import ConfigError
from fabricsim.topology import from_edges

SQUARE = ([0, 1, 2, 3], [1, 2, 3, 0])


def test_unit_strings():
    t = from_edges(*SQUARE, n_npus=4, bandwidth="400Gbps", latency="1.5us")
    assert t.n_links == 8 and t.name == "direct:4"
    assert np.all(t.link_bw == 400e9 / 8)
    assert t.link_lat.tolist() == pytest.approx([1.5e-6] * 8, rel=1e-12)


def test_per_edge_strings_and_numbers():
    # edge i's value on its link both ways (links 0..3 forward, 4..7 back)
    t = from_edges(*SQUARE, n_npus=4, bandwidth=["8Gbps", "2GB/s", 3e9, np.float64(4e9)], latency=[0, "1ns", 2e-9, "3ns"])
    assert t.link_bw.tolist() == [1e9, 2e9, 3e9, 4e9] * 2
    assert t.link_lat.tolist() == pytest.approx([0, 1e-9, 2e-9, 3e-9] * 2, abs=1e-21)
    t = from_edges(*SQUARE, n_npus=4, bandwidth=np.array([1e9, 2e9, 3e9, 4e9]), latency=np.zeros(4))
    assert t.link_bw.tolist() == [1e9, 2e9, 3e9, 4e9] * 2


def test_defaults_are_the_cli_defaults():
    t = from_edges(*SQUARE, n_npus=4)
    assert np.all(t.link_bw == 50e9)
    assert t.link_lat.tolist() == pytest.approx([100e-9] * 8, rel=1e-12)


def test_keyword_only():
    with pytest.raises(TypeError):
        from_edges("square", 4, 0, *SQUARE, 50e9, 1e-7)  # the old seven positional arguments
    with pytest.raises(TypeError):
        from_edges(*SQUARE, 4)


def test_switch_nodes_and_name():
    t = from_edges([0, 1, 2], [3, 3, 3], n_npus=3, n_switches=1, name="star3")
    assert (t.name, t.n_npus, t.n_switches, t.n_links) == ("star3", 3, 1, 6)
    ptr, _ = t.route([0], [2])
    assert int(np.diff(ptr)[0]) == 2  # through the switch


@pytest.mark.parametrize("kwargs, field, shown", [
    ({"bandwidth": "fast"}, "bandwidth", "'fast'"),
    ({"bandwidth": 0}, "bandwidth", "0"),
    ({"bandwidth": np.array([1e9, 1e9, 0.0, 1e9])}, "bandwidth", "0.0"),
    ({"bandwidth": ["1GB/s", "2GB/s"]}, "bandwidth", "'2 values'"),
    ({"latency": "-3ns"}, "latency", "'-3ns'"),
    ({"latency": "10"}, "latency", "'10'"),  # a string needs its unit
    ({"latency": np.array([1e-9, np.nan, 0, 0])}, "latency", "nan"),
    ({"n_npus": 0}, "n_npus", "0"),
    ({"n_npus": "4"}, "n_npus", "'4'"),
    ({"n_switches": -1}, "n_switches", "-1"),
])
def test_bad_values_are_one_line(kwargs, field, shown):
    args = {"n_npus": 4, **kwargs}
    with pytest.raises(ConfigError) as ei:
        from_edges(*SQUARE, **args)
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith(f"{field}: invalid value {shown};") and "accepted" in msg, msg


@pytest.mark.parametrize("src, dst, field, shown", [
    ([0, 1, 2, 7], [1, 2, 3, 0], "src", "7"),  # node 7 on 4 NPUs
    ([0, 1, 2, 3], [1, 2, 3, -1], "dst", "-1"),
    ([0, 1, 2, 3], [1, 2, 3], "dst", "'3 nodes'"),
    ([0.5, 1], [1, 2], "src", "[0.5, 1]"),
    (["a", "b"], [1, 2], "src", "['a', 'b']"),
])
def test_bad_edges_are_one_line(src, dst, field, shown):
    with pytest.raises(ConfigError) as ei:
        from_edges(src, dst, n_npus=4)
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith(f"{field}: invalid value {shown};"), msg


# ---- the router's tie rule: fewest hops, then the lowest link id ------------------------------------


def test_tie_rule_on_a_square():
    """0-1-2-3-0, links 0..3 forward (i -> i+1), 4..7 back (i+1 -> i). 0 -> 2: via 1 (link 0) or via
    3 (link 7): link 0. 2 -> 0: via 1 (link 5) or via 3 (link 2): link 2, then 3 -> 0 (link 3)."""
    t = from_edges(*SQUARE, n_npus=4)
    ptr, links = t.route([0, 2], [2, 0])
    assert links[ptr[0]:ptr[1]].tolist() == [0, 1]
    assert links[ptr[1]:ptr[2]].tolist() == [2, 3]


def _bfs_hops(n, src, dst):
    """Hop counts by a plain breadth-first search from every node (reference, not the router)."""
    out = [[] for _ in range(n)]
    for a, b in zip(src, dst):
        out[a].append(b)
    hops = np.full((n, n), -1)
    for s in range(n):
        hops[s, s], frontier = 0, [s]
        while frontier:
            nxt = []
            for u in frontier:
                for v in out[u]:
                    if hops[s, v] < 0:
                        hops[s, v] = hops[s, u] + 1
                        nxt.append(v)
            frontier = nxt
    return hops


def test_tie_rule_on_a_random_graph_matches_a_reference():
    rng = np.random.default_rng(7)
    n = 48
    a = np.concatenate([np.arange(n), rng.integers(0, n, 60)])
    b = np.concatenate([(np.arange(n) + 1) % n, rng.integers(0, n, 60)])
    keep = a != b
    t = from_edges(a[keep], b[keep], n_npus=n, bandwidth=1e9, latency=0)
    hops = _bfs_hops(n, t.link_src.tolist(), t.link_dst.tolist())
    table = t.router.next_link
    for u in range(n):
        for d in range(n):
            want = [ln for ln in range(t.n_links)
                    if t.link_src[ln] == u and u != d and hops[t.link_dst[ln], d] == hops[u, d] - 1]
            assert table[u, d] == (min(want) if want else -1)
