"""`DgxRouter`: the routing of a dgx topology (NVLink inside a node, NCCL's PXN rail alignment
between nodes on a rail fabric, own NIC to own NIC otherwise; GPU <-> the switches above it).

The routes are described in the module doc of `builders.dgx`, which builds the router's link
tables (`build_dgx`) and re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph import Topology


@dataclass(frozen=True, eq=False)
class DgxRouter:
    """Routing of a dgx topology (module doc): NVLink inside a node, PXN rail alignment on a rail
    fabric, own NIC to own NIC otherwise; NPU <-> its NVSwitch, its NIC, the leaf and spines above
    its NIC (in-network reductions). Link ids index the topology's arrays; -1 where absent.

    Parameters
    ----------
    gpus, nics, rail, per_leaf, first_leaf : int, int, bool, int, int
        GPUs and NICs per node (nics 0: one node), a rail fabric (PXN), m ends per leaf, node id of
        leaf 0 (spines follow the leaves).
    nv_up, nv_down, pcie_up, pcie_down : int64 arrays [n]
        GPU -> its NVSwitch and back, GPU -> its NIC and back.
    nic_up, nic_down, nic_leaf, nic_pos : int64 arrays [nodes x nics]
        NIC -> its leaf and back; each NIC's leaf (0-based) and its end's position on that leaf.
    leaf_up, spine_down : int64 arrays [leaves, spines], [spines, leaves]
        Leaf -> spine and spine -> leaf links (no spines: empty).
    """

    gpus: int
    nics: int
    rail: bool
    per_leaf: int
    first_leaf: int
    nv_up: np.ndarray
    nv_down: np.ndarray
    pcie_up: np.ndarray
    pcie_down: np.ndarray
    nic_up: np.ndarray
    nic_down: np.ndarray
    nic_leaf: np.ndarray
    nic_pos: np.ndarray
    leaf_up: np.ndarray
    spine_down: np.ndarray

    def nic_of(self, npu: np.ndarray) -> np.ndarray:
        """Global NIC index (node x nics + rail) of each GPU's own NIC.

        Parameters
        ----------
        npu : int64 array
            GPUs.

        Returns
        -------
        int64 array
            NIC indexes; the NIC's node id is n + nodes + index.
        """
        return npu // self.gpus * self.nics + npu % self.gpus * self.nics // self.gpus

    def block_size(self, topo: Topology) -> int:
        """NPUs per block of the local symmetry this router keeps (`topology.blocks`): a node. Between
        two GPUs of a node the route is NVLink up and down, and to a switch of the node (its NVSwitch,
        a NIC of its GPU) the link there and back, each by the GPUs' local indices alone."""
        return self.gpus

    def spine_of(self, a_pos, a_leaf, b_pos, b_leaf) -> np.ndarray:
        """The spine of a leaf-to-leaf transfer: (m i + j + A + B) mod spines for end i of leaf A to
        end j of leaf B (every term reduced first: no overflow).

        Parameters
        ----------
        a_pos, a_leaf, b_pos, b_leaf : int64 arrays [T]
            Positions of the two ends on their leaves, and the leaves.

        Returns
        -------
        int64 array [T]
            Spine indexes 0..spines-1.
        """
        k, m = self.leaf_up.shape[1], self.per_leaf
        return (m % k * (a_pos % k) + b_pos + a_leaf % k + b_leaf % k) % k

    def route(self, topo: Topology, src: np.ndarray, dst: np.ndarray):
        """Paths of GPU -> GPU transfers, GPU -> a switch above it and back (class doc).

        Parameters
        ----------
        topo : Topology
            The topology this router belongs to.
        src, dst : int64 arrays [T]
            GPUs, or a GPU and its NVSwitch, its NIC, the leaf above its NIC or a spine.

        Returns
        -------
        ptr : int64 array [T + 1]
        links : int64 array
            Transfer t uses links `links[ptr[t]:ptr[t + 1]]`, in path order (none when src == dst).
            ValueError for a node outside the topology, a switch-to-switch pair or a switch not above the GPU.
        """
        n, T = topo.n_npus, len(src)
        if T and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= topo.n_nodes):
            raise ValueError("dgx routing: node outside the topology")
        sw_s, sw_d = src >= n, dst >= n
        if (sw_s & sw_d).any():
            raise ValueError("dgx routing: switch-to-switch transfers are not routed")
        hops = np.full((T, 8), -1, dtype=np.int64)
        m = ~sw_s & ~sw_d & (src != dst)
        self._gpu_pairs(hops, np.flatnonzero(m), src[m], dst[m])
        for mask, gpu, sw, down in ((~sw_s & sw_d, src, dst, False), (sw_s & ~sw_d, dst, src, True)):
            if mask.any():
                hops[np.flatnonzero(mask), :3] = self._switch_path(topo, gpu[mask], sw[mask], down)
        valid = hops >= 0
        ptr = np.zeros(T + 1, dtype=np.int64)
        np.cumsum(valid.sum(axis=1), out=ptr[1:])
        return ptr, hops[valid]

    def _gpu_pairs(self, hops: np.ndarray, t: np.ndarray, s: np.ndarray, d: np.ndarray) -> None:
        """Fill `hops[t]` with the paths s -> d of distinct GPUs (columns: nvlink up, nvlink down,
        pcie up, nic up, leaf up, spine down, nic down, pcie down)."""
        G = self.gpus
        same = s // G == d // G
        hops[t[same], 0], hops[t[same], 1] = self.nv_up[s[same]], self.nv_down[d[same]]
        t, s, d = t[~same], s[~same], d[~same]
        if not len(t):
            return
        if self.nics == 0:
            raise ValueError("dgx routing: one node has no path between nodes")
        if self.rail:  # PXN: leave through the destination's rail, via the proxy GPU of that rail
            proxy = s // G * G + d % G
            hop = self.nic_of(s) != self.nic_of(proxy)
            hops[t[hop], 0], hops[t[hop], 1] = self.nv_up[s[hop]], self.nv_down[proxy[hop]]
            s = np.where(hop, proxy, s)
        qs, qd = self.nic_of(s), self.nic_of(d)
        hops[t, 2], hops[t, 3] = self.pcie_up[s], self.nic_up[qs]
        ls, ld = self.nic_leaf[qs], self.nic_leaf[qd]
        x = ls != ld
        if x.any():
            sp = self.spine_of(self.nic_pos[qs[x]], ls[x], self.nic_pos[qd[x]], ld[x])
            hops[t[x], 4], hops[t[x], 5] = self.leaf_up[ls[x], sp], self.spine_down[sp, ld[x]]
        hops[t, 6], hops[t, 7] = self.nic_down[qd], self.pcie_down[d]

    def _switch_path(self, topo: Topology, g: np.ndarray, x: np.ndarray, down: bool) -> np.ndarray:
        """Paths GPU g -> switch x above it (or x -> g when `down`), rows of 3 links padded with -1
        at the end: its NVSwitch (1 link), its NIC (1), the leaf above its NIC (2) or a spine (3)."""
        n, G = topo.n_npus, self.gpus
        out = np.full((len(g), 3), -1, dtype=np.int64)
        nv = x == n + g // G
        out[nv, 0] = (self.nv_down if down else self.nv_up)[g[nv]]
        ok = nv.copy()
        if self.nics:
            q = self.nic_of(g)
            leaf = self.nic_leaf[q]
            spine = x - self.first_leaf - self.leaf_up.shape[0]
            at = ((1, x == n + n // G + q), (2, x == self.first_leaf + leaf),
                  (3, (spine >= 0) & (spine < self.leaf_up.shape[1])))
            for depth, hit in at:
                if not hit.any():
                    continue
                gh, qh, lh = g[hit], q[hit], leaf[hit]
                sh = spine[hit] if depth == 3 else None
                if down:  # spine -> leaf -> NIC -> GPU
                    cols = [self.pcie_down[gh], self.nic_down[qh], *([self.spine_down[sh, lh]] if depth == 3 else [])]
                    cols = cols[:depth][::-1]
                else:
                    cols = [self.pcie_up[gh], self.nic_up[qh], *([self.leaf_up[lh, sh]] if depth == 3 else [])][:depth]
                out[hit, :depth] = np.stack(cols, axis=1)
                ok |= hit
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise ValueError(f"dgx routing: node {int(x[i])} is not a switch above GPU {int(g[i])}")
        return out
