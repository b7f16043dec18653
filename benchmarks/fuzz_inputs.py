"""Every command on hostile inputs: the table of tests/hostile_cases.py plus generated inputs (a
seeded grammar of near-valid tokens per command), each run under a 3 GiB address-space cap and a
60 s alarm (tests/hostile.py). Writes results/fuzz_inputs.json and prints, per command, the inputs
tried and how they ended: exit 0, exit 2 with one line, and the defects (tracebacks, hangs, memory
errors, silent acceptances, refusals of valid input, errors not on one line or naming the wrong field).

Then the fuzz net generated from the schemas and the command tree (tests/fuzz_schema.py, issue 46):
every leaf of every config schema with every hostile value, every option of every command with
every hostile value, each in a capped child process under a 60 s alarm (a case stuck past it in
compiled code is killed). Its table counts ok / error and the defect classes (traceback,
wrong-field, multi-line, hang, absurd, runaway); each defect is listed with the entry of
tests/test_fuzz_schemas.py's KNOWN_DEFECTS that covers it, if any.

    .venv/bin/python benchmarks/fuzz_inputs.py [--per-command 100] [--seed 0] [--schema-per-leaf N | --no-schema]
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from hostile import ASTRA, ASTRA_ARGS, TINY_TRAFFIC, TINY_TRAIN, Case, run_cases  # noqa: E402
from hostile_cases import all_cases  # noqa: E402

NUM = ["0", "1", "2", "3", "7", "8", "16", "-1", "1.5", "1e308", "nan", "inf", "99999999999999999999999", "2**70", "",
       "0x10", "1e9", "abc", "100000000"]
UNIT = ["", "B", "b", "KiB", "MiB", "GiB", "GB/s", "Gbps", "TB/s", "ns", "us", "s", "k", "M"]
FAMILIES = ["ring", "torus", "mesh", "switch", "fully-connected", "fat-tree", "wafer", "fred", "stack", "circulant",
            "nope"]
OPTS = ["reduce", "uni", "leaf=4", "leaf=8", "spines=64", "oversub=1e308", "oversub=2", "io=1GB/s", "noio",
        "iothrottle", "up=12TB/s", "x"]
ALGS = ["ring", "swing", "direct", "bucket", "hierarchical", "in_network", "double_binary_tree", "recursive_doubling",
        "halving_doubling", "hamiltonian_rings", "nope"]
COLLS = ["all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "reduce", "nope"]
OPT_KEYS = ["chunks", "bidirectional", "dims", "root", "leaf_of", "mode", "ports", "lockstep", ""]
OPT_VALS = NUM + ["true", "false", "maybe", "3x3", "4x4", "bandwidth", "latency", "single", "all"]
YAML_VALUES = NUM + ["true", "[]", "{}", "!!set {a}", "[1.5, 2.7]", "'3'", "null", "100GB/s", "1us", "2020-01-01",
                     "[a, b]", "0-3", "0-99999999999", "!!binary aGk=", "{family: torus, dims: [2, 2]}"]


def _spec(r: random.Random) -> str:
    fam = r.choice(FAMILIES)
    shape = "x".join(r.choice(NUM) for _ in range(r.randint(1, 3)))
    if fam == "stack":
        shape = "x".join(r.choice(["Ring", "Switch", "FullyConnected", "Nope"]) + r.choice(NUM) for _ in range(r.randint(1, 3)))
    if fam == "circulant":
        shape = f"{r.choice(NUM)}:{r.choice(NUM)},{r.choice(NUM)}"
    opts = "".join("," + r.choice(OPTS) for _ in range(r.randint(0, 2)))
    return f"{fam}:{shape}{opts}"


def _value(r: random.Random) -> str:
    return r.choice(NUM) + r.choice(UNIT)


def collective_inputs(r: random.Random, n: int) -> list[Case]:
    """Random `collective` command lines: a spec, an algorithm, options, sizes, a group."""
    out = []
    for _ in range(n):
        argv = ["collective", "-t", _spec(r) if r.random() < 0.5 else r.choice(["ring:8", "torus:4x4", "switch:8"]),
                "-a", r.choice(ALGS), "-c", r.choice(COLLS), "-q"]
        if r.random() < 0.6:
            argv += ["-s", r.choice([_value(r), f"{_value(r)}:{_value(r)}", f"{_value(r)}:{_value(r)}:{r.choice(NUM)}"])]
        else:
            argv += ["-s", "1MiB"]
        for _ in range(r.randint(0, 2)):
            argv += ["-o", f"{r.choice(OPT_KEYS)}={r.choice(OPT_VALS)}"]
        if r.random() < 0.3:
            argv += ["-g", r.choice(["0-3", "0-99999999999", "a,b", "", "3-0", "0,0", "0-7:2"] + NUM)]
        if r.random() < 0.2:
            argv += [r.choice(["-B", "-L"]), _value(r)]
        if r.random() < 0.2:
            argv += ["--root", r.choice(NUM)]
        if r.random() < 0.2:
            argv += [r.choice(["-m", "--json", "--csv", "--nccl", "--no-verify"])]
            if argv[-1] == "-m":
                argv += [r.choice(["flow", "analytical", "congestion-unaware", "nope", ""])]
        out.append(Case("collective", tuple(argv), "any", defect="generated"))
    return out


def _mutate_yaml(r: random.Random, text: str, fields: list[str]) -> str:
    import yaml

    data = yaml.safe_load(text)
    for _ in range(r.randint(1, 2)):
        *parents, leaf = r.choice(fields).split(".")
        node = data
        for p in parents:
            if not isinstance(node.get(p), dict):
                node[p] = {}
            node = node[p]
        node[leaf] = f"@@{len(str(node))}@@"
    out = yaml.safe_dump(data, default_flow_style=False)
    import re

    return re.sub(r"'?@@\d+@@'?", lambda m: r.choice(YAML_VALUES), out)


TRAIN_FIELDS = ["network.topology", "network.latency", "network.bandwidth", "network.model", "system.npu.efficiency",
                "system.npu.peak", "system.npu.memory_bandwidth", "workload.iterations", "workload.batch",
                "workload.model", "system.scheduling.chunks", "system.scheduling.priorities", "system.endpoint.policy",
                "workload.parallelism.dp", "workload.parallelism.mp", "output.trace_npus", "output.dir", "base_dir",
                "workload.parallelism.zero", "network.algorithms"]
TRAFFIC_FIELDS = ["topology", "bandwidth", "latency", "mode", "flows", "collectives", "model"]
# this year's models (issue 43): a mixture of experts by shape under tp, cp, ep and the distributed
# optimizer, and two jobs on one network; every new key mutated
TINY_MODERN = """\
network: {topology: 'switch:8', bandwidth: 100GB/s, latency: 1us}
system: {npu: {peak: 100TFLOP/s, memory_bandwidth: 1TB/s, efficiency: 0.5}}
workload:
  model: {layers: 2, hidden: 256, heads: 8, kv_heads: 4, seq: 128, vocab: 1000, ffn_act: swiglu, norm: rmsnorm,
          experts: 4, top_k: 2, position: rope, bias: false}
  batch: 4
  dtype: bf16
  parallelism: {mp: 2, cp: 2, dp: 2, ep: 2, zero: 1, microbatches: 2}
output: {trace: false, plot: false}
"""
MODERN_FIELDS = ["workload.model.kv_heads", "workload.model.experts", "workload.model.top_k",
                 "workload.model.moe_layers", "workload.model.capacity_factor", "workload.model.moe_imbalance",
                 "workload.model.shared_experts", "workload.model.expert_ffn", "workload.model.ffn_act",
                 "workload.model.norm", "workload.model.preset", "workload.model.position", "workload.model.seq",
                 "workload.dtype", "workload.parallelism.cp", "workload.parallelism.cp_comm", "workload.parallelism.ep",
                 "workload.parallelism.etp", "workload.parallelism.zero", "workload.parallelism.reshard_after_forward",
                 "workload.parallelism.placement", "workload.parallelism.mp", "workload.parallelism.dp",
                 "workload.parallelism.attention", "workload.parallelism.recompute"]
TINY_JOBS = """\
network: {topology: 'switch:8', bandwidth: 100GB/s, latency: 1us}
system: {npu: {peak: 100TFLOP/s, memory_bandwidth: 1TB/s, efficiency: 0.5}}
jobs:
  - {name: a, gpus: 0-3, model: resnet50, batch: 8, parallelism: {dp: 4}}
  - {name: b, gpus: {first: 4, count: 4}, model: resnet50, batch: 8, parallelism: {dp: 4}}
output: {trace: false, plot: false}
"""
JOBS_FIELDS = ["jobs", "network.topology", "system.npu.peak"]


def train_inputs(r: random.Random, n: int) -> list[Case]:
    """Random one- and two-field mutations of a small train config."""
    return [Case("train", ("train", "{d}/t.yaml", "--out", "{d}/o", "-q"), "any",
                 files=(("t.yaml", _mutate_yaml(r, TINY_TRAIN, TRAIN_FIELDS)),), defect="generated") for _ in range(n)]


def modern_inputs(r: random.Random, n: int) -> list[Case]:
    """Random mutations of a small mixture-of-experts job under tp, cp and ep (`TINY_MODERN`), and of
    a config with two jobs (`TINY_JOBS`): every key of issue 43."""
    out = []
    for i in range(n):
        base, fields = (TINY_JOBS, JOBS_FIELDS) if i % 4 == 3 else (TINY_MODERN, MODERN_FIELDS)
        out.append(Case("train", ("train", "{d}/t.yaml", "--out", "{d}/o", "-q"), "any",
                        files=(("t.yaml", _mutate_yaml(r, base, fields)),), defect="generated"))
    return out


def traffic_inputs(r: random.Random, n: int) -> list[Case]:
    """Random mutations of a small traffic file, top level and inside its flow and collective items."""
    out = []
    item_keys = ["src", "dst", "size", "start", "count", "priority", "cap", "group", "algorithm", "collective",
                 "options", "name"]
    for _ in range(n):
        text = TINY_TRAFFIC
        if r.random() < 0.5:
            text = _mutate_yaml(r, text, TRAFFIC_FIELDS)
        else:
            key = r.choice(item_keys)
            line = r.choice(["  - {name: f, src: 0, dst: 2", "  - {name: c, collective: all-reduce"])
            text = text.replace(line, f"{line}, {key}: {r.choice(YAML_VALUES)}") if f"{key}:" not in line else text
        out.append(Case("traffic", ("traffic", "{d}/t.yaml", "-q"), "any", files=(("t.yaml", text),),
                        defect="generated"))
    return out


def astra_inputs(r: random.Random, n: int) -> list[Case]:
    """Random options and mutated network YAML / system JSON for `astra`."""
    net = (ASTRA / "networks" / "Ring_8.yml").read_text()
    system = json.loads((ASTRA / "systems" / "sys_ring_1d_s4_a1.json").read_text())
    out = []
    for _ in range(n):
        args = list(ASTRA_ARGS)
        files = []
        pick = r.random()
        if pick < 0.3:
            args += ["--injection-scale", r.choice(NUM)]
        elif pick < 0.6:
            lines = net.splitlines()
            i = r.randrange(len(lines))
            key = lines[i].split(":")[0]
            lines[i] = f"{key}: [ {r.choice(NUM + ['Ring', 'Switch', '8, 8'])} ]"
            files.append(("net.yml", "\n".join(lines) + "\n"))
            args[args.index("--network-configuration") + 1] = "{d}/net.yml"
        else:
            sysd = dict(system)
            key = r.choice(list(sysd) + ["unknown-key"])
            sysd[key] = r.choice([-1, 0, 1.5, "nope", None, [], 10**30, "ring"])
            files.append(("sys.json", json.dumps(sysd)))
            args[args.index("--system-configuration") + 1] = "{d}/sys.json"
        if r.random() < 0.3:
            args += ["--model", r.choice(["analytical", "flow", "nope"]), "--json"]
        out.append(Case("astra", tuple(args), "any", files=tuple(files), defect="generated"))
    return out


def export_inputs(r: random.Random, n: int) -> list[Case]:
    """Random `export chakra` command lines."""
    out = []
    for _ in range(n):
        argv = ["export", "chakra", "-o", r.choice(["{d}/ar", "", "{d}", "/proc/x/y", "{d}/sub/ar"])]
        src = r.random()
        if src < 0.5:
            argv += ["--collective", r.choice(COLLS), "-n", r.choice(NUM), "-s", _value(r)]
        elif src < 0.8:
            argv += ["--text", f"{ASTRA.parent.parent}/reference/astra-sim/legacy/Resnet50_DataParallel.txt"
                     if r.random() < 0.8 else "{d}", "-n", r.choice(NUM), "--passes", r.choice(NUM)]
        else:
            argv += ["--collective", "all-reduce", "--text", "x"]
        if r.random() < 0.2:
            argv += ["--units", r.choice(["ns", "converter", "nope"])]
        out.append(Case("export", tuple(argv), "any", defect="generated"))
    return out


TINY_JOB = """\
servers: 8
degree: 4
link_bandwidth: 100Gbps
latency: 1us
server: {gpus: 4, intra_bandwidth: 200Gbps, npu: {peak: 624TFLOP/s, memory_bandwidth: 6TB/s}}
workload: {model: resnet50, batch_per_gpu: 2}
search: {steps: 2, rounds: 1}
"""
JOB_FIELDS = ["servers", "degree", "link_bandwidth", "latency", "network_model", "server.gpus", "server.intra_bandwidth",
              "server.npu.peak", "workload.model", "workload.batch_per_gpu", "workload.bag", "search.steps",
              "search.rounds", "search.alpha", "search.split", "search.select", "search.max_groups", "search.seed"]
TINY_SWEEP = """\
name: s
kind: collective
base: {collective: all-reduce, latency: 500ns, model: analytical}
axes:
  - grid: {topology: ['ring:8', 'torus:4x4'], algorithm: [ring, swing]}
  - grid: {size: [1KiB, 1MiB]}
"""
SWEEP_FIELDS = ["name", "kind", "base.collective", "base.latency", "base.model", "base.bandwidth", "base.size",
                "base.topology", "seed", "axes"]


def topology_inputs(r: random.Random, n: int) -> list[Case]:
    """Random mutations of a small `topology optimize` job."""
    return [Case("topology optimize", ("topology", "optimize", "{d}/j.yaml", "--out", "{d}/o", "-q"), "any",
                 files=(("j.yaml", _mutate_yaml(r, TINY_JOB, JOB_FIELDS)),), defect="generated") for _ in range(n)]


def sweep_inputs(r: random.Random, n: int) -> list[Case]:
    """Random mutations of a small collective sweep, validated with --dry-run (every point checked)."""
    return [Case("sweep", ("sweep", "{d}/s.yaml", "--out", "{d}/o", "--dry-run"), "any",
                 files=(("s.yaml", _mutate_yaml(r, TINY_SWEEP, SWEEP_FIELDS)),), defect="generated") for _ in range(n)]


def main() -> None:
    """Run the table and the generated inputs; write results/fuzz_inputs.json and print the table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-command", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--schema-per-leaf", type=int, default=0,
                    help="hostile values per schema leaf and per option (0: every value)")
    ap.add_argument("--no-schema", action="store_true", help="skip the schema- and option-driven cases")
    a = ap.parse_args()
    r = random.Random(a.seed)
    cases = all_cases()
    for gen in (collective_inputs, train_inputs, modern_inputs, traffic_inputs, astra_inputs, export_inputs,
                topology_inputs, sweep_inputs):
        cases += gen(r, a.per_command)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        outs = run_cases(cases, Path(d), timeout_s=60.0, memory_bytes=3 * 2**30)
    wall = time.perf_counter() - t0
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for o in outs:
        table[o.case["command"]][o.verdict] += 1
    defects = [o for o in outs if o.verdict not in ("ok", "error")]
    cols = ["ok", "error", "traceback", "hang", "memory", "crash", "silent", "refused", "not-one-line", "wrong-field",
            "stderr-noise"]
    print(f"| command | inputs | exit 0 | exit 2, one line | {' | '.join(cols[2:])} |")
    print("|---" * (len(cols) + 2) + "|")
    for cmd, cnt in table.items():
        print(f"| {cmd} | {sum(cnt.values())} | " + " | ".join(str(cnt[c]) for c in cols) + " |")
    total = collections.Counter(o.verdict for o in outs)
    print(f"| all | {len(outs)} | " + " | ".join(str(total[c]) for c in cols) + " |")
    print(f"{len(outs)} inputs in {wall:.0f} s; {len(defects)} defects")
    for o in defects:
        print(f"  {o.verdict}: {' '.join(o.case['argv'])[:160]} :: {o.err.strip()[-200:]}")
    res = {"inputs": len(outs), "wall_s": round(wall, 1), "seed": a.seed, "per_command": a.per_command,
           "table": {k: dict(v) for k, v in table.items()},
           "defects": [{"verdict": o.verdict, "argv": o.case["argv"], "err": o.err[-300:]} for o in defects]}
    if not a.no_schema:
        res.update(schema_driven(a.schema_per_leaf or None))
    path = HERE / "results" / "fuzz_inputs.json"
    path.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {path}")


def schema_driven(per_leaf: int | None) -> dict:
    """The fuzz net of tests/fuzz_schema.py: every schema leaf and every option with `per_leaf`
    hostile values (None: all); prints its table, returns its part of the results."""
    import fuzz_schema as fz
    from test_fuzz_schemas import KNOWN_DEFECTS, _cli_cases, known

    cases = [c for t in fz.targets() for c in fz.schema_cases(t, per_leaf)] + _cli_cases(per_leaf)
    counts = {"leaves": {t.name: len(t.leaves()) for t in fz.targets()},
              "options": {" ".join(c) or "fabricsim": len(o) for c, o in fz.cli_commands().items()}}
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    defects = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d, fz.Runner(Path(d), timeout_s=60.0) as runner:
        for c in cases:
            o = runner.run(c)
            table[c.target][o.verdict] += 1
            if o.verdict not in ("ok", "error"):
                k = known(c, o.verdict)
                defects.append({"verdict": o.verdict, "target": c.target, "where": c.where, "value": c.value[:80],
                                "err": o.err.strip()[-300:], "note": o.note, "known": k["id"] if k else None})
    wall = time.perf_counter() - t0
    cols = list(fz.CLASSES)
    print(f"\nschema- and option-driven (tests/fuzz_schema.py): {len(cases)} inputs in {wall:.0f} s")
    print(f"| target | inputs | {' | '.join(cols)} |")
    print("|---" * (len(cols) + 2) + "|")
    for name, cnt in table.items():
        print(f"| {name} | {sum(cnt.values())} | " + " | ".join(str(cnt[k]) for k in cols) + " |")
    total = collections.Counter()
    for cnt in table.values():
        total.update(cnt)
    print(f"| all | {len(cases)} | " + " | ".join(str(total[k]) for k in cols) + " |")
    unknown = [x for x in defects if not x["known"]]
    print(f"{len(defects)} defects, {len(unknown)} not in KNOWN_DEFECTS ({len(KNOWN_DEFECTS)} entries)")
    for x in defects:
        print(f"  {x['verdict']}: {x['target']} | {x['where']} | {x['value'][:40]} :: {x['known'] or 'NEW'} "
              f"{x['err'][-160:]} {x['note']}")
    return {"schema_inputs": len(cases), "schema_wall_s": round(wall, 1), "schema_per_leaf": per_leaf or "all",
            "schema_counts": counts, "schema_table": {k: dict(v) for k, v in table.items()},
            "schema_defects": defects}


if __name__ == "__main__":
    main()
