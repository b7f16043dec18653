"""ASTRA-sim emulation, part 3: the native collective algorithms' message state machines
(ring, direct, halvingDoubling, doubleBinaryTree) and collectives given as Chakra graphs."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..errors import ConfigError
from .config import Impl
from .emu_network import ALL_GATHER, ALL_REDUCE, ALL_TO_ALL, CUSTOM, REDUCE_SCATTER

if TYPE_CHECKING:
    from .emu_system import Stream, Sys


class Algorithm:
    stream: Stream
    final_data_size: int

    def send(self, dst: int, size: int) -> None:
        s = self.stream
        s.sys.world.net.sim_send(s.sys.id, dst, s.id, size, None)

    def recv(self, src: int, size: int) -> None:
        s = self.stream
        s.sys.world.net.sim_recv(s.sys.id, src, s.id, size, s.received)

    def exit(self) -> None:
        self.stream.sys.proceed(self.stream)


class RingLine:
    """The NPUs of one dimension line around `npu`, in ring order (or an explicit member list,
    for communicator groups and flat rings)."""

    def __init__(self, npu: int, size: int, stride: int, members: tuple[int, ...] | None = None):
        self.size = size
        self.members = members
        if members is not None:
            self.pos = {m: i for i, m in enumerate(members)}
            self.index = self.pos[npu]
            return
        self.stride = stride
        self.index = (npu // stride) % size
        self.base = npu - self.index * stride

    def at(self, index: int) -> int:
        if self.members is not None:
            return self.members[index % self.size]
        return self.base + (index % self.size) * self.stride

    def next(self, npu: int, clockwise: bool = True) -> int:
        i = self.pos[npu] if self.members is not None else (npu - self.base) // self.stride
        return self.at(i + (1 if clockwise else -1))


class Ring(Algorithm):
    """Ring (and, as `Direct`, ASTRA-sim's AllToAll class): a queue of packets; a packet is
    injected on init and after every receive, crosses the memory bus, then is sent."""

    direct = False

    def __init__(self, coll: str, npu: int, line: RingLine, data_size: int, window: int | None = None):
        self.coll = coll
        self.id = npu
        self.line = line
        n = self.n = line.size
        self.receiver = line.next(npu, True)
        self.sender = line.next(npu, False)
        self.parallel = 1
        self.packets: list = []  # (dest, src)
        self.free_packets = 0
        self.received_count = 0
        self.zero = 0
        self.nonzero = 0
        self.toggle = False
        if coll == ALL_REDUCE:
            self.stream_count = 2 * (n - 1)
        elif coll == ALL_TO_ALL:
            self.stream_count = (n - 1) * n // 2
        else:
            self.stream_count = n - 1
        if coll == ALL_REDUCE:
            self.final_data_size, self.msg = data_size, data_size // n
        elif coll == ALL_GATHER:
            self.final_data_size, self.msg = data_size * n, data_size
        elif coll == REDUCE_SCATTER:
            self.final_data_size, self.msg = data_size // n, data_size // n
        else:
            self.final_data_size, self.msg = data_size, data_size // n
        if self.direct:
            self.middle = n - 1
            self.parallel = n - 1 if window is None else min(window, n - 1)
            if coll == ALL_TO_ALL:
                self.stream_count = n - 1

    def nonzero_packets(self) -> int:
        if self.direct:
            return self.parallel
        return (self.n - 1) * self.parallel

    def run(self, event: str) -> None:
        if event == "general":
            self.free_packets += 1
            if self.direct and self.coll == ALL_REDUCE and self.stream_count <= self.middle:
                if self.received_count < self.middle:
                    return
                for _ in range(self.parallel):
                    self.ready()
                self.iterate()
            else:
                self.ready()
                self.iterate()
        elif event == "recv":
            self.received_count += 1
            self.insert()
        else:  # init
            for _ in range(self.parallel):
                self.insert()

    def insert(self) -> None:
        if self.zero == 0 and self.nonzero == 0:
            self.zero = self.parallel
            self.nonzero = self.nonzero_packets()
            self.toggle = not self.toggle
        if self.zero > 0:
            self.packets.append((self.receiver, self.sender))
            self.release(to_memory=True, processed=False)
            self.zero -= 1
        elif self.nonzero > 0:
            self.packets.append((self.receiver, self.sender))
            processed = self.coll == REDUCE_SCATTER or (self.coll == ALL_REDUCE and self.toggle)
            self.release(to_memory=False, processed=processed)
            self.nonzero -= 1
        else:  # pragma: no cover - ASTRA-sim panics here too
            raise RuntimeError("ring: should not inject nothing")

    def release(self, to_memory: bool, processed: bool) -> None:
        self.stream.sys.bundle(self.stream, self.msg, processed and not to_memory)
        if self.direct:
            self.receiver = self.line.next(self.receiver, True)
            if self.receiver == self.id:
                self.receiver = self.line.next(self.receiver, True)
            self.sender = self.line.next(self.sender, False)
            if self.sender == self.id:
                self.sender = self.line.next(self.sender, False)

    def ready(self) -> bool:
        if not self.packets or self.stream_count == 0 or self.free_packets == 0:
            return False
        dest, src = self.packets.pop(0)
        self.send(dest, self.msg)
        self.recv(src, self.msg)
        self.stream_count -= 1
        self.free_packets -= 1
        return True

    def iterate(self) -> None:
        if self.stream_count == 0 and self.free_packets == self.parallel:
            self.exit()


class Direct(Ring):
    direct = True


class HalvingDoubling(Algorithm):
    def __init__(self, coll: str, npu: int, line: RingLine, data_size: int):
        if coll == ALL_TO_ALL:
            raise ConfigError("all-to-all-implementation", "halvingDoubling",
                              "ASTRA-sim's halvingDoubling has no all-to-all (it exits); accepted: ring, direct")
        n = line.size
        if n & (n - 1):
            raise ConfigError("implementation", "halvingDoubling",
                              f"needs a power-of-two dimension, got {n} NPUs")
        self.coll = coll
        self.id = npu
        self.line = line
        self.n = n
        self.log = int(math.log2(n))
        self.stream_count = 2 * self.log if coll == ALL_REDUCE else self.log
        self.packets: list = []
        self.free_packets = 0
        self.zero = 0
        self.nonzero = 0
        self.toggle = False
        if coll == ALL_REDUCE:
            self.final_data_size, self.msg, self.offset, self.mult = data_size, data_size // 2, 1, 2.0
        elif coll == ALL_GATHER:
            self.final_data_size, self.msg, self.offset, self.mult = data_size * n, data_size, n // 2, 0.5
        else:
            self.final_data_size, self.msg, self.offset, self.mult = data_size // n, data_size // 2, 1, 2.0
        self._aim()

    def _aim(self) -> None:
        clockwise = self.offset == 0 or (self.line.index // self.offset) % 2 == 0
        r = self.id
        for _ in range(self.offset):
            r = self.line.next(r, clockwise)
        self.receiver = self.sender = r

    def run(self, event: str) -> None:
        if event == "general":
            self.free_packets += 1
            self.ready()
            self.iterate()
        elif event == "recv":
            self.insert()
        else:
            self.insert()

    def insert(self) -> None:
        if self.zero == 0 and self.nonzero == 0:
            self.zero = 1
            self.nonzero = self.log - 1
            self.toggle = not self.toggle
        if self.zero > 0:
            self.packets.append((self.receiver, self.sender, self.msg))
            self.release(False)
            self.zero -= 1
        elif self.nonzero > 0:
            self.packets.append((self.receiver, self.sender, self.msg))
            processed = self.coll == REDUCE_SCATTER or (self.coll == ALL_REDUCE and self.toggle)
            self.release(processed)
            self.nonzero -= 1
        else:  # pragma: no cover
            raise RuntimeError("halvingDoubling: should not inject nothing")

    def release(self, processed: bool) -> None:
        self.stream.sys.bundle(self.stream, self.msg, processed)
        self.offset = int(self.offset * self.mult)
        self.msg = int(self.msg / self.mult)
        if self.offset == self.n and self.coll == ALL_REDUCE:
            self.mult = 0.5
            self.offset = int(self.offset * self.mult)
            self.msg = int(self.msg / self.mult)
        self._aim()

    def ready(self) -> bool:
        if not self.packets or self.stream_count == 0 or self.free_packets == 0:
            return False
        dest, src, size = self.packets.pop(0)
        self.send(dest, size)
        self.recv(src, size)
        self.stream_count -= 1
        self.free_packets -= 1
        return True

    def iterate(self) -> None:
        if self.stream_count == 0 and self.free_packets == 1:
            self.exit()


class BinaryTree:
    """ASTRA-sim's logical binary tree over n NPUs (start, stride): a complete tree of depth
    floor(log2 n) under a top node, numbered in order; RootMax puts the subtree left of the
    top (top = largest id), RootMin right (top = smallest id)."""

    def __init__(self, n: int, start: int, stride: int, root_max: bool):
        depth = 1
        tmp = n
        while tmp > 1:
            depth += 1
            tmp //= 2
        self.parent: dict[int, int] = {}
        self.left: dict[int, int] = {}
        self.right: dict[int, int] = {}
        counter = [start]
        nodes: list = []

        def build(d):  # returns a nested (left, right) structure of node slots
            node = {"l": None, "r": None, "id": None}
            if d > 1:
                node["l"] = build(d - 1)
                node["r"] = build(d - 1)
            return node

        top = {"l": None, "r": None, "id": None}
        if root_max:
            top["l"] = build(depth - 1)
        else:
            top["r"] = build(depth - 1)

        def number(node):
            if node["l"] is not None:
                number(node["l"])
            node["id"] = counter[0]
            counter[0] += stride
            nodes.append(node)
            if node["r"] is not None:
                number(node["r"])

        number(top)

        def link(node, parent):
            self.parent[node["id"]] = parent["id"] if parent else -1
            self.left[node["id"]] = node["l"]["id"] if node["l"] else -1
            self.right[node["id"]] = node["r"]["id"] if node["r"] else -1
            for c in (node["l"], node["r"]):
                if c:
                    link(c, node)

        link(top, None)

    def kind(self, npu: int) -> str:
        if self.parent[npu] == -1:
            return "root"
        if self.left[npu] == -1 and self.right[npu] == -1:
            return "leaf"
        return "intermediate"


class DoubleBinaryTree(Algorithm):
    """ASTRA-sim's doubleBinaryTree all-reduce state machine (whole chunk up the tree, reduced
    at every level, and back down; an inner node exits as soon as it has sent to its children)."""

    def __init__(self, npu: int, tree: BinaryTree, data_size: int):
        self.id = npu
        self.size = data_size
        self.final_data_size = data_size
        self.state = "begin"
        self.reductions = 0
        self.parent = tree.parent[npu]
        self.left = tree.left[npu]
        self.right = tree.right[npu]
        self.type = tree.kind(npu)

    def _bundle(self, processing: bool) -> None:
        self.stream.sys.bundle(self.stream, self.size, processing)

    def run(self, event: str) -> None:
        t, st = self.type, self.state
        if t == "leaf":
            if st == "begin":
                self._bundle(False)
                self.state = "to_parent"
            elif st == "to_parent":
                self.send(self.parent, self.size)
                self.recv(self.parent, self.size)
                self.state = "from_parent"
            elif st == "from_parent":
                self._bundle(False)
                self.state = "end"
            elif st == "end":
                self.exit()
            return
        if t == "intermediate":
            if st == "begin":
                self.state = "two_children"
                self.recv(self.left, self.size)
                self.recv(self.right, self.size)
            elif st == "two_children" and event == "recv":
                self._bundle(True)
                self.state = "one_child"
            elif st == "one_child" and event == "recv":
                self._bundle(True)
                self.state = "to_parent"
            elif self.reductions < 1 and event == "general":
                self.reductions += 1
            elif st == "to_parent":
                self.state = "from_parent"
                self.send(self.parent, self.size)
                self.recv(self.parent, self.size)
            elif st == "from_parent" and event == "recv":
                self._bundle(True)
                self.state = "to_children"
            elif st == "to_children":
                self.send(self.left, self.size)
                self.send(self.right, self.size)
                self.exit()
            return
        # root
        child = self.left if self.left >= 0 else self.right
        if st == "begin":
            self.state = "one_child"
            self.recv(child, self.size)
        elif st == "one_child":
            self._bundle(True)
            self.state = "to_children"
        elif st == "to_children":
            self.send(child, self.size)
            self.exit()


class DepGraph:
    """Chakra nodes and their data/control dependencies: which are free to run, and which
    become free when one finishes (dependencies outside the graph are ignored)."""

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
        """Mark `nid` done; its children whose dependencies are all done join `free` (sorted)."""
        for c in self.children[nid]:
            self.waiting[c] -= 1
            if self.waiting[c] == 0:
                self.free.append(c)
        self.free.sort()


class CustomAlgorithm(Algorithm):
    """A collective given as per-rank Chakra graphs of send / recv / compute nodes (ASTRA-sim's
    custom collectives, e.g. converted from MSCCL): nodes run as their dependencies allow; a
    send completes when it arrives, a compute node takes its duration (at least 1 ns)."""

    def __init__(self, coll: str, npu: int, nodes, members, data_size: int):
        self.id = npu
        self.members = members
        self.final_data_size = data_size
        self.graph = DepGraph(nodes)
        self.ongoing: set[int] = set()

    def real(self, rank: int) -> int:
        return self.members[rank] if self.members is not None else rank

    def run(self, event: str) -> None:
        self.issue_free()

    def issue_free(self) -> None:
        free, self.graph.free = self.graph.free, []
        for nid in free:
            self.issue(self.graph.nodes[nid])

    def issue(self, node) -> None:
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
        self.ongoing.discard(nid)
        self.graph.finish(nid)
        self.issue_free()
        if not self.ongoing and not self.graph.free:
            self.exit()


def make_algorithm(sys: Sys, coll: str, dim: int, dims: tuple[int, ...], impl: Impl, data_size: int, flat: bool,
                   members: tuple[int, ...] | None = None) -> Algorithm:
    npu = sys.id
    stride = 1 if flat else math.prod(dims[:dim])
    size = dims[dim]
    name = impl.name
    if impl is CUSTOM:
        pos = members.index(npu) if members is not None else npu
        return CustomAlgorithm(coll, npu, sys.world.sys_spec.custom[coll][pos], members, data_size)
    line = RingLine(npu, size, stride, members)
    if name in ("ring", "oneRing"):
        return Ring(coll, npu, line, data_size)
    if name in ("direct", "oneDirect"):
        return Direct(coll, npu, line, data_size, impl.window)
    if name in ("halvingDoubling", "oneHalvingDoubling"):
        return HalvingDoubling(coll, npu, line, data_size)
    if name == "doubleBinaryTree":
        if coll != ALL_REDUCE:
            raise ConfigError("implementation", "doubleBinaryTree", "ASTRA-sim's doubleBinaryTree serves all-reduce only")
        last = dim == len(dims) - 1
        start = npu % stride if last else (npu - npu % (stride * size)) + npu % stride
        key = (coll, dim)
        k = sys.dbt_counter.get(key, 0)
        sys.dbt_counter[key] = k + 1
        cache = sys.world.trees
        tkey = (size, start, stride, k % 2 == 0)
        if tkey not in cache:
            cache[tkey] = BinaryTree(size, start, stride, root_max=k % 2 == 0)
        return DoubleBinaryTree(npu, cache[tkey], data_size)
    raise ConfigError("implementation", name, "accepted: ring, direct, directN, halvingDoubling, doubleBinaryTree, oneRing, oneDirect, oneHalvingDoubling")
