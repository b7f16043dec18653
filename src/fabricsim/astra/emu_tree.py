"""ASTRA-sim emulation, part 3c: doubleBinaryTree, ASTRA-sim's tree all-reduce: the logical
binary tree it builds over a dimension, and the per-NPU state machine that reduces the whole
chunk up the tree and sends it back down."""

from __future__ import annotations

from .emu_base import Algorithm


class BinaryTree:
    """ASTRA-sim's logical binary tree over n NPUs (start, stride): a complete tree of depth
    floor(log2 n) under a top node, numbered in order; RootMax puts the subtree left of the
    top (top = largest id), RootMin right (top = smallest id).

    Parameters
    ----------
    n : int
        NPUs in the tree.
    start : int
        Rank of the first NPU (in-order position 0).
    stride : int
        Rank distance between consecutive in-order positions.
    root_max : bool
        RootMax (True) or RootMin (False); doubleBinaryTree alternates them between chunks.

    Attributes
    ----------
    parent, left, right : dict of int to int
        Per NPU rank, the rank of its parent and children, -1 where there is none.
    """

    def __init__(self, n: int, start: int, stride: int, root_max: bool):
        depth = 1
        tmp = n
        while tmp > 1:
            depth += 1
            tmp //= 2
        self.parent: dict[int, int] = {}
        self.left: dict[int, int] = {}
        self.right: dict[int, int] = {}
        top = {"l": None, "r": None, "id": None}
        top["l" if root_max else "r"] = self._slots(depth - 1)
        self._number(top, start, stride)
        self._link(top, None)

    @staticmethod
    def _slots(d: int) -> dict:
        """A complete subtree of depth `d` of unnumbered node slots ({"l", "r", "id"})."""
        node = {"l": None, "r": None, "id": None}
        if d > 1:
            node["l"] = BinaryTree._slots(d - 1)
            node["r"] = BinaryTree._slots(d - 1)
        return node

    @staticmethod
    def _number(node: dict, first: int, stride: int) -> int:
        """Number the subtree's slots in order, from rank `first` in steps of `stride`; the next
        rank is returned."""
        nxt = first
        if node["l"] is not None:
            nxt = BinaryTree._number(node["l"], nxt, stride)
        node["id"] = nxt
        nxt += stride
        if node["r"] is not None:
            nxt = BinaryTree._number(node["r"], nxt, stride)
        return nxt

    def _link(self, node: dict, parent: dict | None) -> None:
        """Record the parent and children of every NPU of the subtree (-1 for none)."""
        self.parent[node["id"]] = parent["id"] if parent else -1
        self.left[node["id"]] = node["l"]["id"] if node["l"] else -1
        self.right[node["id"]] = node["r"]["id"] if node["r"] else -1
        for c in (node["l"], node["r"]):
            if c:
                self._link(c, node)

    def kind(self, npu: int) -> str:
        """The role of an NPU in the tree.

        Parameters
        ----------
        npu : int
            An NPU of the tree.

        Returns
        -------
        str
            "root", "leaf" or "intermediate".
        """
        if self.parent[npu] == -1:
            return "root"
        if self.left[npu] == -1 and self.right[npu] == -1:
            return "leaf"
        return "intermediate"


class DoubleBinaryTree(Algorithm):
    """ASTRA-sim's doubleBinaryTree all-reduce state machine (whole chunk up the tree, reduced
    at every level, and back down; an inner node exits as soon as it has sent to its children).

    Parameters
    ----------
    npu : int
        The NPU running this phase.
    tree : BinaryTree
        The tree this chunk uses.
    data_size : int
        Bytes of the chunk (every message carries all of it).
    """

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
        """Advance the node's state machine on an event; leaves, intermediate nodes and the root
        each follow their own states.

        Parameters
        ----------
        event : str
            "init", "general" (a bundle is back from the memory bus) or "recv" (a message arrived).
        """
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
