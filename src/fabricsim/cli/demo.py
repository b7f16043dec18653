"""`fabricsim demo`: the main question answered on embedded defaults."""

from __future__ import annotations

import typer

# lazy: rich.table, the algorithms and the topology builders are imported inside `demo` (start-up time)
from ..topology.defaults import DEFAULT_BANDWIDTH, DEFAULT_LATENCY
from ..units import format_time
from .app import app, out_console as _out
from .collective import run_collective


DEMO_CASES = (
    ("torus:8x8", "swing"), ("torus:8x8", "bucket"),
    ("torus:8x8", "ring"), ("torus:8x8", "hierarchical"), ("torus:8x8", "halving_doubling"),
    ("torus:8x8", "recursive_doubling"), ("torus:8x8", "double_binary_tree"), ("torus:8x8", "direct"),
    ("switch:64,reduce", "ring"), ("switch:64,reduce", "halving_doubling"), ("switch:64,reduce", "in_network"),
)


@app.command()
def demo(
    bandwidth: str = typer.Option(DEFAULT_BANDWIDTH, "--bandwidth", "-B"),
    latency: str = typer.Option(DEFAULT_LATENCY, "--latency", "-L"),
):
    """All-reduce algorithms on an 8x8 torus and a 64-port switch, and one GPT-3 training iteration (embedded defaults)."""
    from rich.table import Table

    from ..collectives.registry import ALGORITHMS
    from ..topology.spec import parse_topology

    con = _out()
    sizes = "4KiB,1MiB,64MiB,1GiB"
    con.print(f"# fabricsim demo: 64-rank all-reduce, {bandwidth} links, {latency}, congestion-aware; every schedule verified on data")
    table = Table(box=None, header_style="bold")
    table.add_column("topology")
    table.add_column("algorithm")
    table.add_column("steps", justify="right")
    for s in sizes.split(","):
        table.add_column(f"busbw {s} (GB/s)", justify="right")
    for topo, alg in DEMO_CASES:
        if alg not in ALGORITHMS:
            continue
        header, rows = run_collective(topo, bandwidth, latency, "all-reduce", alg, sizes, "congestion-aware")
        table.add_row(topo, alg, str(header["steps"]), *(f"{r['busbw_GBps']:.2f}" for r in rows))
    con.print(table)
    con.print("# busbw = algbw x 2(n-1)/n (nccl-tests); each link carries "
              f"{parse_topology('ring:2', bandwidth, latency).link_bw[0] / 1e9:g} GB/s per direction; a torus node has 4 "
              "links and multiport algorithms (swing, bucket) use them all", highlight=False)
    # the main question: one training iteration and where its time goes (embedded defaults)
    from ..report.train import breakdown_table
    from ..train import TrainConfig, run_train

    cfg = TrainConfig.model_validate(DEMO_TRAIN)
    res = run_train(cfg).result
    con.print()
    con.print(f"# {cfg.name}: one iteration takes {format_time(res.iteration_time)}", highlight=False, markup=False)
    con.print(breakdown_table(res, "where the time goes (mean over NPUs, per pipeline stage)"))
    con.print("# the same from a file, with a Perfetto trace and a plot: fabricsim train configs/gpt3-175b-64.yaml",
              highlight=False, markup=False)


DEMO_TRAIN = {  # configs/gpt3-175b-64.yaml: its comments say why ZeRO-2 and full recompute (80 GB per GPU)
    "name": "GPT-3 175B, MP(8)-DP(2)-PP(4), 1F1B, 8 microbatches, ZeRO-2, full recompute, on 64 H100 80 GB "
            "(8 per 450 GB/s switch, 400 Gb/s between)",
    "network": {"topology": "stack:Switch8xSwitch8", "bandwidth": ["450GB/s", "400Gbps"], "latency": ["100ns", "1us"]},
    "system": {"npu": {"peak": "989TFLOP/s", "memory_bandwidth": "3.35TB/s", "efficiency": 0.5, "memory": "80GB"},
               "scheduling": {"comm_streams": "per-category"}},
    "workload": {"model": "gpt3-175b", "batch": 32,
                 "parallelism": {"mp": 8, "dp": 2, "pp": 4, "microbatches": 8, "schedule": "1f1b", "zero": 2,
                                 "recompute": "full"}},
}
