"""The legacy ASTRA-sim 1.0 text workload, and its conversion to Chakra traces.

File layout (whitespace-separated; tabs, trailing tabs and CRLF line ends all occur in the shipped files):

    line 1   parallelism [params]   MICRO | DATA | MODEL | HYBRID_DATA_MODEL | HYBRID_MODEL_DATA |
                                    HYBRID_DLRM <last_bottom_layer> | HYBRID_DLRM_ENHANCED <last_bottom_layer> |
                                    HYBRID_TRANSFORMER model_parallel_NPU_group: <n> | HYBRID_TRANSFORMER_FWD_IN_BCKWD |
                                    HYBRID_CUSTOMIZED (13th column per layer: that layer's parallelism)
    line 2   number of layers
    then per layer: name reserved fwd_compute fwd_comm_type fwd_comm_bytes ig_compute ig_comm_type ig_comm_bytes
                    wg_compute wg_comm_type wg_comm_bytes wg_update

Compute times keep their ASTRA-sim 1.0 meaning: cycles of a 1 GHz clock, i.e. nanoseconds.

`text_to_traces` rebuilds what Chakra's `chakra_converter Text` writes (same nodes, names, ids, dependencies,
attributes and metadata; see the function for the graph shapes), which stores those nanosecond numbers in
`duration_micros` -- so ASTRA-sim 2.x runs converted compute 1000x too long. `duration_unit="ns"` keeps the
original meaning instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .chakra import COMM_COLL_NODE, COMP_NODE, EtNode, EtTrace
from .chakra_schema import COLLECTIVE_COMM_TYPES

PARALLELISMS = ("MICRO", "DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_DLRM",
                "HYBRID_DLRM_ENHANCED", "HYBRID_TRANSFORMER", "HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_CUSTOMIZED")
CONVERTIBLE = ("MICRO", "DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_DLRM",
               "HYBRID_DLRM_ENHANCED")
COMM_TYPES = ("NONE", "ALLREDUCE", "ALLGATHER", "ALLTOALL", "REDUCESCATTER")

# Text comm type -> CollectiveCommType as the Chakra converter maps it (NONE falls through to 0 = ALL_REDUCE).
CONVERTER_COMM_TYPE = {
    "ALLREDUCE": COLLECTIVE_COMM_TYPES["ALL_REDUCE"],
    "ALLTOALL": COLLECTIVE_COMM_TYPES["ALL_TO_ALL"],
    "ALLGATHER": COLLECTIVE_COMM_TYPES["ALL_GATHER"],
    "REDUCESCATTER": COLLECTIVE_COMM_TYPES["REDUCE_SCATTER"],
    "NONE": COLLECTIVE_COMM_TYPES["ALL_REDUCE"],
}
CONVERTER_SCHEMA = "1.0.2-chakra.0.0.4"  # GlobalMetadata attr "schema" of the reference converter outputs
_COMM_FIELDS = ("fwd_comm", "ig_comm", "wg_comm")


@dataclass(frozen=True)
class TextComm:
    """A communication of a layer phase.

    Parameters
    ----------
    type : str
        One of `COMM_TYPES` (NONE, ALLREDUCE, ALLGATHER, ALLTOALL, REDUCESCATTER).
    bytes : int
        Its size as written, bytes.
    """

    type: str
    bytes: int


@dataclass(frozen=True)
class TextLayer:
    """One layer line. Compute times (`*_ns`) are ASTRA-sim 1.0 cycles = ns, exactly as written.
    `parallelism` is the 13th column of HYBRID_CUSTOMIZED files, else None.

    Parameters
    ----------
    name : str
        Layer name.
    reserved : int
        The second column, kept as written.
    fwd_compute_ns, ig_compute_ns, wg_compute_ns : int
        Forward, input-gradient and weight-gradient compute, ns.
    fwd_comm, ig_comm, wg_comm : TextComm
        The communication after each of them (type, bytes).
    wg_update_ns : int
        Weight-update compute, ns.
    parallelism : str, optional
        This layer's parallelism (HYBRID_CUSTOMIZED only).
    """

    name: str
    reserved: int
    fwd_compute_ns: int
    fwd_comm: TextComm
    ig_compute_ns: int
    ig_comm: TextComm
    wg_compute_ns: int
    wg_comm: TextComm
    wg_update_ns: int
    parallelism: str | None = None


@dataclass(frozen=True)
class TextWorkload:
    """A parsed text workload.

    Parameters
    ----------
    parallelism : str
        One of `PARALLELISMS` (line 1).
    params : dict
        Line 1's extra fields: `last_bottom_layer` for HYBRID_DLRM*, `key: value` pairs otherwise
        (e.g. {"model_parallel_NPU_group": 4}).
    layers : tuple of TextLayer
        The layer lines, in order.
    source : str
        The file text (newlines normalised, as the converter embeds it in GlobalMetadata).
    path : str
        Where it came from (named in errors).
    """

    parallelism: str
    params: dict[str, Any]
    layers: tuple[TextLayer, ...]
    source: str = field(default="", compare=False, repr=False)
    path: str = field(default="<text>", compare=False, repr=False)


# ---------------------------------------------------------------------------------------------- parsing

def read_astra_text(path: str | Path) -> TextWorkload:
    """Parse a legacy ASTRA-sim 1.0 text workload file.

    Parameters
    ----------
    path : str or Path
        The file (module doc for its layout).

    Returns
    -------
    TextWorkload
        Its parallelism, line-1 parameters and layers; a one-line ConfigError naming the file,
        the line and the field otherwise.
    """
    from ..config import read_input_text

    # a regular UTF-8 file within the file_bytes limit; universal newlines, as the converter reads it
    text = read_input_text(path, what="an ASTRA-sim text workload file")
    return parse_astra_text(text, str(path))


def _int(tok: str, where: str, what: str) -> int:
    try:
        return int(tok)
    except ValueError:
        raise ConfigError(f"{where}: {what}", tok, "expected an integer") from None


def _parse_params(parallelism: str, toks: list[str], where: str) -> dict[str, Any]:
    if parallelism in ("HYBRID_DLRM", "HYBRID_DLRM_ENHANCED"):
        if not toks:
            raise ConfigError(f"{where}: last_bottom_layer", "missing",
                              f"expected '{parallelism} <index of the last bottom-MLP layer>'")
        params: dict[str, Any] = {"last_bottom_layer": _int(toks[0], where, "last_bottom_layer")}
        toks = toks[1:]
    else:
        params = {}
    key = None
    for tok in toks:
        if tok.endswith(":") and len(tok) > 1:
            key = tok[:-1]
            params[key] = ()
        elif key is None:
            raise ConfigError(f"{where}: parallelism parameters", tok,
                              "expected 'key: value' pairs such as 'model_parallel_NPU_group: 4'")
        else:
            params[key] = params[key] + (_int(tok, where, key),)
    return {k: (v[0] if isinstance(v, tuple) and len(v) == 1 else v) for k, v in params.items()}


def parse_astra_text(text: str, path: str = "<text>") -> TextWorkload:
    """Parse the text of a legacy ASTRA-sim 1.0 workload (module doc for the layout).

    Parameters
    ----------
    text : str
        The file's text.
    path : str
        Names it in errors (`<path>:<line>: <field>: ...`).

    Returns
    -------
    TextWorkload
        A one-line ConfigError naming the path, the line and the field otherwise.
    """
    lines = text.splitlines()
    numbered = [(i + 1, ln.split()) for i, ln in enumerate(lines)]
    numbered = [(no, toks) for no, toks in numbered if toks]
    if not numbered:
        raise ConfigError(f"{path}:1: parallelism", "empty file", f"expected one of {', '.join(PARALLELISMS)}")
    no, head = numbered[0]
    parallelism = head[0]
    if parallelism not in PARALLELISMS:
        raise ConfigError(f"{path}:{no}: parallelism", parallelism, f"expected one of {', '.join(PARALLELISMS)}")
    params = _parse_params(parallelism, head[1:], f"{path}:{no}")
    if len(numbered) < 2:
        raise ConfigError(f"{path}:{no + 1}: layer count", "missing", "expected the number of layers on line 2")
    no, toks = numbered[1]
    if len(toks) != 1:
        raise ConfigError(f"{path}:{no}: layer count", " ".join(toks), "expected one integer")
    count = _int(toks[0], f"{path}:{no}", "layer count")
    if count < 1:
        raise ConfigError(f"{path}:{no}: layer count", count, "expected at least 1 layer")
    nfields = 13 if parallelism == "HYBRID_CUSTOMIZED" else 12
    layers = []
    for no, toks in numbered[2:]:
        where = f"{path}:{no}"
        if len(toks) != nfields:
            raise ConfigError(f"{where}: layer fields", len(toks),
                              f"expected {nfields} whitespace-separated fields: name reserved fwd_compute "
                              "fwd_comm_type fwd_comm_bytes ig_compute ig_comm_type ig_comm_bytes wg_compute "
                              "wg_comm_type wg_comm_bytes wg_update" + (" parallelism" if nfields == 13 else ""))
        comms = []
        for what, (t, b) in zip(_COMM_FIELDS, ((toks[3], toks[4]), (toks[6], toks[7]), (toks[9], toks[10]))):
            if t not in COMM_TYPES:
                raise ConfigError(f"{where}: {what} type", t, f"expected one of {', '.join(COMM_TYPES)}")
            size = _int(b, where, f"{what} bytes")
            if size < 0:
                raise ConfigError(f"{where}: {what} bytes", size, "expected a byte count >= 0")
            comms.append(TextComm(t, size))
        times = {}
        for what, tok in (("fwd_compute", toks[2]), ("ig_compute", toks[5]), ("wg_compute", toks[8]),
                          ("wg_update", toks[11])):
            times[what] = _int(tok, where, what)
            if times[what] < 0:
                raise ConfigError(f"{where}: {what}", times[what], "expected a time in cycles (ns) >= 0")
        layers.append(TextLayer(
            name=toks[0], reserved=_int(toks[1], where, "reserved"), fwd_compute_ns=times["fwd_compute"],
            fwd_comm=comms[0], ig_compute_ns=times["ig_compute"], ig_comm=comms[1],
            wg_compute_ns=times["wg_compute"], wg_comm=comms[2], wg_update_ns=times["wg_update"],
            parallelism=toks[12] if nfields == 13 else None))
    if len(layers) != count:
        raise ConfigError(f"{path}:{numbered[1][0]}: layer count", count,
                          f"expected the number of layer lines that follow ({len(layers)})")
    source = text.replace("\r\n", "\n").replace("\r", "\n")
    return TextWorkload(parallelism, params, tuple(layers), source=source, path=path)


# ---------------------------------------------------------------------------------------------- conversion

class _Graph:
    """Nodes of one NPU, numbered in creation order like the converter's counter."""

    def __init__(self, duration: Callable[[int], int | float]):
        self.nodes: list[EtNode] = []
        self.none_comms: set[int] = set()
        self.duration = duration

    def _add(self, **kw) -> int:
        nid = len(self.nodes)
        self.nodes.append(EtNode(id=nid, **kw))
        return nid

    def comp(self, layer: TextLayer, phase: str, ns: int, *deps: int | None) -> int:
        return self._add(name=f"COMP_NODE_{layer.name}_{phase}", type=COMP_NODE, duration_micros=self.duration(ns),
                         data_deps=tuple(d for d in deps if d is not None))

    def coll(self, label: str, comm: TextComm, *deps: int | None) -> int:
        nid = self._add(name=f"COMM_COLL_NODE_{label}_{comm.type}", type=COMM_COLL_NODE,
                        data_deps=tuple(d for d in deps if d is not None),
                        attrs={"comm_type": CONVERTER_COMM_TYPE[comm.type], "comm_size": comm.bytes})
        if comm.type == "NONE":
            self.none_comms.add(nid)
        return nid


def _micro(g: _Graph, layers, passes: int, wl: TextWorkload) -> None:
    """MICRO: the weight-gradient collective of every layer, every pass, with no dependencies."""
    for _ in range(passes):
        for L in layers:
            g.coll(L.name, L.wg_comm)


def _data(g: _Graph, layers, passes: int, wl: TextWorkload) -> None:
    """DATA: forward chain, then backward in reverse: per layer WG compute, its all-reduce, IG compute
    (the first layer has no IG)."""
    n = len(layers)
    wg_comm: list[int | None] = [None] * n  # survives into the next pass
    for _ in range(passes):
        fwd: list[int] = []
        for i, L in enumerate(layers):
            fwd.append(g.comp(L, "FWD", L.fwd_compute_ns, fwd[i - 1] if i else None, wg_comm[i]))
        ig: list[int | None] = [None] * n
        prev = fwd[-1]
        for i in reversed(range(n)):
            L = layers[i]
            wg = g.comp(L, "BWD_WG", L.wg_compute_ns, prev)
            wg_comm[i] = g.coll(L.name, L.wg_comm, wg)
            if i:
                ig[i] = prev = g.comp(L, "BWD_IG", L.ig_compute_ns, wg)


def _model_like(g: _Graph, layers, passes: int, wl: TextWorkload) -> None:
    """MODEL, HYBRID_DATA_MODEL, HYBRID_MODEL_DATA: forward compute + forward collective per layer, then
    backward in reverse: IG compute, IG collective (not for the first layer), WG compute, and (hybrids only)
    the WG collective."""
    kind = wl.parallelism
    n = len(layers)
    hybrid = kind != "MODEL"
    carry: list[int | None] = [None] * n  # MODEL: last WG compute, hybrids: last WG collective
    for _ in range(passes):
        fwd_comm: list[int] = []
        for i, L in enumerate(layers):
            prev = fwd_comm[i - 1] if i else None
            deps = (carry[i], prev) if hybrid else (prev, carry[i])
            f = g.comp(L, "FWD", L.fwd_compute_ns, *deps)
            fwd_comm.append(g.coll(L.name, L.fwd_comm, f))
        wg: list[int | None] = [None] * n
        ig_comm: list[int | None] = [None] * n
        below = None  # index of the layer handled just before (the one above in the model)
        for i in reversed(range(n)):
            L = layers[i]
            if below is None:
                ig = g.comp(L, "BWD_IG", L.ig_compute_ns, fwd_comm[-1])
            else:
                ig = g.comp(L, "BWD_IG", L.ig_compute_ns, wg[below], ig_comm[below])
            if i:
                label = L.name + "_IG_COMM_" if kind == "HYBRID_DATA_MODEL" else L.name
                ig_comm[i] = g.coll(label, L.ig_comm, ig)
            wg[i] = g.comp(L, "BWD_WG", L.wg_compute_ns, ig)
            carry[i] = g.coll(L.name, L.wg_comm, wg[i]) if hybrid else wg[i]
            below = i


def _dlrm(g: _Graph, layers, passes: int, wl: TextWorkload) -> None:
    """HYBRID_DLRM(_ENHANCED), k = last_bottom_layer: forward chain with an ALLTOALL after every layer whose
    forward comm is ALLTOALL (the embedding, layer 0); layer k also waits for layer 0's all-to-all. Backward
    in reverse like DATA (WG, WG collective unless NONE, IG), plus layer 0's IG collective issued after the
    IG of layer k+1; layer 0's WG waits for it."""
    n = len(layers)
    k = wl.params.get("last_bottom_layer")
    if not isinstance(k, int) or not 0 <= k < n:
        raise ConfigError(f"{wl.path}: last_bottom_layer", k, f"expected a layer index from 0 to {n - 1}")
    if k and layers[0].fwd_comm.type != "ALLTOALL":
        raise ConfigError(f"{wl.path}: layer 0 fwd_comm type", layers[0].fwd_comm.type,
                          "expected ALLTOALL (the converter makes layer last_bottom_layer wait for it)")
    wg_comp: list[int | None] = [None] * n
    wg_comm: list[int | None] = [None] * n
    ig_comp: list[int | None] = [None] * n
    ig_comm0: int | None = None
    for _ in range(passes):
        fwd: list[int] = []
        fwd_comm: list[int | None] = [None] * n
        for i, L in enumerate(layers):
            back = wg_comm[i] if wg_comm[i] is not None else wg_comp[i]
            f = g.comp(L, "FWD", L.fwd_compute_ns, back, fwd[i - 1] if i else None, fwd_comm[0] if i == k else None)
            fwd.append(f)
            if L.fwd_comm.type == "ALLTOALL":
                fwd_comm[i] = g.coll(L.name, L.fwd_comm, f)
        for i in reversed(range(n)):
            L = layers[i]
            if i == n - 1:
                w = g.comp(L, "BWD_WG", L.wg_compute_ns, fwd[-1])
            else:
                w = g.comp(L, "BWD_WG", L.wg_compute_ns, ig_comp[i + 1], ig_comm0 if i == 0 else None)
            wg_comp[i] = w
            if L.wg_comm.type != "NONE":
                wg_comm[i] = g.coll(L.name, L.wg_comm, w)
            if i:
                ig_comp[i] = g.comp(L, "BWD_IG", L.ig_compute_ns, w)
            if i == k + 1:
                ig_comm0 = g.coll(layers[0].name, layers[0].ig_comm, ig_comp[i])


_CONVERTERS = {"MICRO": _micro, "DATA": _data, "MODEL": _model_like, "HYBRID_DATA_MODEL": _model_like,
               "HYBRID_MODEL_DATA": _model_like, "HYBRID_DLRM": _dlrm, "HYBRID_DLRM_ENHANCED": _dlrm}


def _drop(nodes: list[EtNode], drop: set[int]) -> list[EtNode]:
    """Remove `drop` nodes; whoever waited for one waits for its dependencies instead; renumber 0..n-1."""
    subst: dict[int, tuple[int, ...]] = {}

    def resolve(deps):
        out: list[int] = []
        for d in deps:
            for x in subst.get(d, (d,)):
                if x not in out:
                    out.append(x)
        return tuple(out)

    kept = []
    for nd in nodes:  # dependencies always point to earlier nodes
        if nd.id in drop:
            subst[nd.id] = resolve(nd.data_deps)
        else:
            kept.append(nd)
    renum = {nd.id: i for i, nd in enumerate(kept)}
    return [EtNode(id=renum[nd.id], name=nd.name, type=nd.type, data_deps=tuple(renum[d] for d in resolve(nd.data_deps)),
                   duration_micros=nd.duration_micros, attrs=nd.attrs) for nd in kept]


def text_to_traces(workload: TextWorkload, npus: int, passes: int = 1, *, duration_unit: str = "converter",
                   none_comms: str = "converter", global_ids: bool = True) -> list[EtTrace]:
    """Per-NPU Chakra traces for a text workload, as Chakra's converter writes them.

    That is, as `chakra_converter Text --num-npus npus --num-passes passes` writes them (every NPU
    gets the same graph). Node names are `COMP_NODE_<layer>_<FWD|BWD_WG|BWD_IG>` and
    `COMM_COLL_NODE_<layer>_<TYPE>`; collective nodes carry `comm_type`/`comm_size` (int64) and no
    `is_cpu_op`; every dependency is a data dependency. For DATA (per pass, layers 0..n-1):

        FWD_0 -> FWD_1 -> ... -> FWD_{n-1} -> WG_{n-1} -> IG_{n-1} -> WG_{n-2} -> IG_{n-2} -> ... -> WG_0
        WG_i -> ALLREDUCE_i (a leaf in a single pass; in pass p+1, FWD_i also waits for pass p's ALLREDUCE_i)

    so the backward critical path is compute-only and every all-reduce overlaps the rest of the
    backward pass.

    Parameters
    ----------
    workload : TextWorkload
        A parsed workload whose parallelism is one of `CONVERTIBLE`.
    npus : int
        NPUs, >= 1: one trace each.
    passes : int
        Training passes, >= 1.
    duration_unit : {"converter", "ns"}
        "converter" stores the text's compute numbers (ns) in duration_micros unchanged, as the
        converter does (ASTRA-sim then runs them 1000x too long); "ns" stores ns/1000, the
        original meaning (float µs: fine in memory, `write_et` rejects non-whole µs).
    none_comms : {"converter", "drop"}
        "converter" keeps the converter's collective for a NONE comm (ALL_REDUCE of the given
        bytes, usually 0, named `..._NONE`); "drop" removes those nodes and makes their dependents
        wait for their dependencies (then node ids are renumbered densely).
    global_ids : bool
        Number nodes with one counter across NPUs as the converter does (NPU r's ids start at
        r x nodes per NPU); False starts every NPU at 0.

    Returns
    -------
    list of EtTrace
        One per NPU, rank order; ConfigError for a parallelism the converter does not handle or a
        bad argument.
    """
    if workload.parallelism not in _CONVERTERS:
        raise ConfigError(f"{workload.path}: parallelism", workload.parallelism,
                          f"text_to_traces converts {', '.join(CONVERTIBLE)} (like Chakra's text converter)")
    for name, v, lo in (("npus", npus, 1), ("passes", passes, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ConfigError(name, v, "accepted: a positive integer")
    if duration_unit == "converter":
        duration: Callable[[int], int | float] = int
    elif duration_unit == "ns":
        duration = lambda ns: ns / 1000
    else:
        raise ConfigError("duration_unit", duration_unit, "accepted: 'converter' or 'ns'")
    if none_comms not in ("converter", "drop"):
        raise ConfigError("none_comms", none_comms, "accepted: 'converter' or 'drop'")
    g = _Graph(duration)
    _CONVERTERS[workload.parallelism](g, workload.layers, passes, workload)
    nodes = g.nodes if none_comms == "converter" else _drop(g.nodes, g.none_comms)
    meta = {"schema": CONVERTER_SCHEMA}
    if workload.source:
        meta["input_file"] = workload.source
    traces = []
    for r in range(npus):
        off = r * len(nodes) if global_ids else 0
        rank_nodes = nodes if not off else tuple(
            EtNode(id=nd.id + off, name=nd.name, type=nd.type, data_deps=tuple(d + off for d in nd.data_deps),
                   duration_micros=nd.duration_micros, attrs=nd.attrs) for nd in nodes)
        traces.append(EtTrace(rank=r, version="", metadata_attrs=meta, nodes=tuple(rank_nodes)))
    return traces
