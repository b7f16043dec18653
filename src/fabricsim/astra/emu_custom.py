"""ASTRA-sim emulation, part 3d: collectives given as per-rank Chakra graphs (ASTRA-sim's custom
collectives, e.g. converted from MSCCL), and `DepGraph`, the dependency tracking they share with
the workload layer."""

from __future__ import annotations

from ..errors import ConfigError
from .emu_base import Algorithm


class DepGraph:
    """Chakra nodes and their data/control dependencies: which are free to run, and which
    become free when one finishes (dependencies outside the graph are ignored).

    Parameters
    ----------
    nodes : iterable of EtNode
        The graph's nodes (anything with `id` and `deps`).

    Attributes
    ----------
    nodes : dict of int to EtNode
        Node id -> node.
    free : list of int
        Ids of nodes whose dependencies have all finished and that nobody took yet, ascending.
    """

    def __init__(self, nodes):
        self.nodes = {n.id: n for n in nodes}
        self.children: dict[int, list[int]] = {i: [] for i in self.nodes}
        self.waiting: dict[int, int] = {}
        for n in self.nodes.values():
            deps = [d for d in n.deps if d in self.nodes]
            self.waiting[n.id] = len(deps)
            for d in deps:
                self.children[d].append(n.id)
        self.free = sorted(i for i, k in self.waiting.items() if k == 0)

    def finish(self, nid: int) -> None:
        """Mark node `nid` done; its children whose dependencies are all done join `free` (sorted).

        Parameters
        ----------
        nid : int
            Id of the node that finished.
        """
        self.free.extend(self.release(nid))
        self.free.sort()

    def release(self, nid: int) -> list[int]:
        """Mark node `nid` done and return its children whose dependencies are now all done (they do
        not join `free`: for a caller that keeps its ready nodes itself, in O(children)).

        Parameters
        ----------
        nid : int
            Id of the node that finished.

        Returns
        -------
        list of int
            The newly free children, in the order `nid` lists them.
        """
        out = []
        for c in self.children[nid]:
            self.waiting[c] -= 1
            if self.waiting[c] == 0:
                out.append(c)
        return out


class CustomAlgorithm(Algorithm):
    """A collective given as per-rank Chakra graphs of send / recv / compute nodes (ASTRA-sim's
    custom collectives, e.g. converted from MSCCL): nodes run as their dependencies allow; a
    send completes when it arrives, a compute node takes its duration (at least 1 ns).

    Parameters
    ----------
    coll : str
        The collective it implements (kept for symmetry with the native algorithms).
    npu : int
        The NPU running it.
    nodes : iterable of EtNode
        This NPU's graph.
    members : tuple of int or None
        Group members, position -> NPU (None: ranks are NPUs).
    data_size : int
        Bytes the stream holds (unchanged by the collective).
    """

    def __init__(self, coll: str, npu: int, nodes, members, data_size: int):
        self.id = npu
        self.members = members
        self.final_data_size = data_size
        self.graph = DepGraph(nodes)
        self.ongoing: set[int] = set()

    def real(self, rank: int) -> int:
        """The NPU of a group position.

        Parameters
        ----------
        rank : int
            Position in the group (the rank the graph names).

        Returns
        -------
        int
            The NPU's rank.
        """
        return self.members[rank] if self.members is not None else rank

    def run(self, event: str) -> None:
        """Issue every node that is free to run.

        Parameters
        ----------
        event : str
            "init", "general" or "recv"; which one does not matter.
        """
        self.issue_free()

    def issue_free(self) -> None:
        """Issue every node that is free to run, ascending id."""
        free, self.graph.free = self.graph.free, []
        for nid in free:
            self.issue(self.graph.nodes[nid])

    def issue(self, node) -> None:
        """Start one node: a send or receive on the network (tag `("p2p", comm_tag)`), or a
        compute node as a delay of its `duration_micros` (x1000 ns, at least 1 ns).

        Parameters
        ----------
        node : EtNode
            A COMM_SEND_NODE, COMM_RECV_NODE or COMP_NODE; any other type is a ConfigError.
        """
        self.ongoing.add(node.id)
        s = self.stream
        net = s.sys.world.net
        done = lambda nid=node.id: self.finish(nid)  # noqa: E731
        if node.type == 5:  # COMM_SEND_NODE
            net.sim_send(self.id, self.real(node.comm_dst), ("p2p", node.comm_tag), node.comm_size, done)
        elif node.type == 6:  # COMM_RECV_NODE
            net.sim_recv(self.id, self.real(node.comm_src), ("p2p", node.comm_tag), node.comm_size, done)
        elif node.type == 4:  # COMP_NODE: a local reduction
            runtime = int(node.duration_micros * 1000) if node.duration_micros else 1
            s.sys.register_event(done, runtime)
        else:
            raise ConfigError("custom collective node", f"{node.id} ({node.type_name})",
                              "accepted: COMM_SEND_NODE, COMM_RECV_NODE, COMP_NODE")

    def finish(self, nid: int) -> None:
        """A node is done: issue what it freed, and leave the phase when nothing is left.

        Parameters
        ----------
        nid : int
            The node's id.
        """
        self.ongoing.discard(nid)
        self.graph.finish(nid)
        self.issue_free()
        if not self.ongoing and not self.graph.free:
            self.exit()
