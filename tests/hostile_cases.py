"""The table of hostile inputs: every defect of issue 17 and its neighbours, per command, each with
what must happen (`ok` or a one-line `error` naming a field). Run by tests/test_hostile_inputs.py
and benchmarks/fuzz_inputs.py through tests/hostile.py."""

from __future__ import annotations

from hostile import ASTRA, ASTRA_ARGS, ROOT, TINY_TRAFFIC, TINY_TRAIN, Case

T = "{d}/t.yaml"


def _c(command, argv, expect, field="", files=(), defect=""):
    return Case(command, tuple(argv), expect, field, tuple(files), defect)


def _coll(extra, expect, field="", defect="", t="ring:8"):
    return _c("collective", ["collective", "-t", t, "-s", "1MiB", "-q", *extra], expect, field, (), defect)


def _train(text, expect, field="", defect="", extra=(), name="t.yaml"):
    return _c("train", ["train", f"{{d}}/{name}", "--out", "{d}/o", "-q", *extra], expect, field,
              ((name, text),), defect)


def _traffic(text, expect, field="", defect="", extra=()):
    return _c("traffic", ["traffic", T, "-q", *extra], expect, field, (("t.yaml", text),), defect)


def _astra(extra, expect, field="", defect="", files=()):
    return _c("astra", [*ASTRA_ARGS, *extra], expect, field, files, defect)


def _export(extra, expect, field="", defect="", files=()):
    return _c("export", ["export", "chakra", *extra], expect, field, files, defect)


def _sub(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


def collective_cases() -> list[Case]:
    """`fabricsim collective`: options, topology specs, algorithm options, ranges."""
    ok = [_coll([], "ok", defect="valid"),
          _coll(["-a", "swing", "-o", "mode=latency"], "ok", defect="valid", t="torus:4x4"),
          _coll(["-c", "broadcast", "--root", "3"], "ok", defect="valid"),
          _coll(["-g", "0-3"], "ok", defect="valid"),
          _coll(["-m", "flow"], "ok", defect="valid"),
          _coll(["--json"], "ok", defect="valid"),
          _coll(["--csv"], "ok", defect="valid"),
          _coll([], "ok", defect="valid", t="fat-tree:16,leaf=4,spines=8"),
          _coll([], "ok", defect="valid", t="dgx-h100:nodes=2"),
          _coll([], "ok", defect="valid", t="dgx:nodes=2,gpus=4,nics=2,nvlink=300GB/s,nic=200Gbps,fabric=fat-tree"),
          _coll(["-o", "bidirectional=false"], "ok", defect="valid", t="torus:4x4"),
          _c("collective", ["--limit", "npus=16", "--limit", "ranks=16", "collective", "-t", "ring:16", "-s", "1KiB", "-q"],
             "ok", defect="resource limit raised"),
          _coll(["--verification", "sample"], "ok", defect="valid"),
          _coll(["--verification", "off"], "ok", defect="valid")]
    err = [
        _coll(["--verification", "nope"], "error", "--verification", "unknown verification mode"),
        _coll(["--verification", "full", "--no-verify"], "error", "--verification", "contradicting options"),
        # tracebacks: options an algorithm does not take or cannot parse
        _coll(["-o", "dims=3x3"], "error", "dims", "option not taken"),
        _coll(["-o", "leaf_of=1"], "error", "leaf_of", "option not taken"),
        _coll(["-o", "root=3"], "error", "root", "option not taken"),
        _coll(["-o", "chunks=abc"], "error", "chunks", "option not parsed"),
        _coll(["-a", "swing", "-o", "chunks=abc"], "error", "chunks", "option not parsed", t="torus:4x4"),
        _coll(["-a", "hierarchical", "-o", "dims=3x3"], "error", "dims", "option not parsed", t="torus:4x4"),
        _coll(["-o", "bidirectional=maybe"], "error", "bidirectional", "bool by truthiness", t="torus:4x4"),
        _coll(["-a", "swing", "-o", "bidirectional=maybe"], "error", "bidirectional", "bool by truthiness", t="torus:4x4"),
        # integers beyond 64 bits, ranges expanded before any check
        _coll(["-g", "99999999999999999999999"], "error", "group", "int beyond 64 bits"),
        _coll(["-g", "0-10000000000"], "error", "group", "range expanded first"),
        _coll(["-g", "0-99999999999999999999999"], "error", "group", "range expanded first"),
        _coll(["-g", ""], "error", "group", "empty group"),
        _coll(["-g", "5-3"], "error", "group", "backwards range"),
        _coll(["--root", "99999999999999999999999", "-c", "broadcast"], "error", "root", "int beyond 64 bits"),
        # sizes
        _coll(["-s", "1:1GiB:1.000001"], "error", "sizes", "size range too long"),
        _coll(["-s", "1b"], "error", "sizes", "fractional bytes"),
        _coll(["-s", "0"], "error", "sizes", "zero size"),
        _coll(["-s", "-1"], "error", "sizes", "negative size"),
        _coll(["-s", "nan"], "error", "sizes", "nan size"),
        _coll(["-s", "1TiB:1KiB"], "error", "sizes", "backwards range"),
        # options that do not apply
        _coll(["--root", "3"], "error", "root", "option does not apply"),
        _coll(["--json", "--csv"], "error", "", "options exclusive"),
        _coll(["-m", "nope"], "error", "flow", "-m list omits flow"),
        _coll(["--root", "-1", "-c", "broadcast"], "error", "root", "negative root"),
        _coll(["--root", "99", "-c", "broadcast"], "error", "root", "root out of range"),
        # link values
        _coll(["-B", "0"], "error", "bandwidth", "zero bandwidth"),
        _coll(["-B", "nanGB/s"], "error", "bandwidth", "nan bandwidth"),
        _coll(["-B", "infGB/s"], "error", "bandwidth", "inf bandwidth"),
        _coll(["-L", "-1ns"], "error", "latency", "negative latency"),
        _coll(["-L", "nan"], "error", "latency", "nan latency"),
        # topology specs
        _coll([], "error", "oversub", "nan/inf answer", t="fat-tree:64,oversub=1e308"),
        _coll([], "error", "leaf", "duplicate option", t="fat-tree:64,leaf=8,leaf=16"),
        _coll([], "error", "reduce", "duplicate option", t="switch:8,reduce,reduce"),
        _coll([], "error", "io", "contradictory options", t="wafer:5x4,noio,io=1GB/s"),
        # dgx: one-line errors naming the field
        _coll([], "error", "gpus", "dgx: no GPUs", t="dgx:nodes=2,gpus=8,nics=8,nvlink=300GB/s,nic=200Gbps".replace("gpus=8", "gpus=0")),
        _coll([], "error", "nodes", "dgx: no nodes", t="dgx:nodes=2,gpus=8,nics=8,nvlink=300GB/s,nic=200Gbps".replace("nodes=2", "nodes=0")),
        _coll([], "error", "nics", "dgx: NICs not dividing the GPUs", t="dgx:nodes=2,gpus=8,nics=8,nvlink=300GB/s,nic=200Gbps".replace("nics=8", "nics=3")),
        _coll([], "error", "nics", "dgx: more NICs than GPUs", t="dgx:nodes=2,gpus=8,nics=8,nvlink=300GB/s,nic=200Gbps".replace("nics=8", "nics=16")),
        _coll([], "error", "fabric", "dgx: unknown fabric", t="dgx:nodes=2,gpus=8,nics=8,nvlink=300GB/s,nic=200Gbps,fabric=torus"),
        _coll([], "error", "nvlink_eff", "dgx: efficiency above 1", t="dgx:nodes=2,gpus=8,nics=8,nvlink=300GB/s,nic=200Gbps,nvlink_eff=1.5"),
        _coll([], "error", "nic_eff", "dgx: zero efficiency", t="dgx:nodes=2,gpus=8,nics=8,nvlink=300GB/s,nic=200Gbps,nic_eff=0"),
        _coll([], "error", "leaf", "dgx: nodes not fitting leaves", t="dgx:nodes=2,gpus=8,nics=8,nvlink=300GB/s,nic=200Gbps".replace("nodes=2", "nodes=40")),
        _coll([], "error", "nic", "dgx: missing NIC rate", t="dgx:nodes=2,nvlink=300GB/s"),
        _coll([], "error", "nvlink", "dgx: missing NVLink rate", t="dgx:nodes=2,nic=200Gbps"),
        # NCCL's protocols and choice (issue 39)
        _coll(["-a", "nccl_ring", "-o", "proto=LL256"], "error", "proto", "unknown protocol", t="dgx-h100:nodes=1"),
        _coll(["-a", "nvls", "-o", "proto=LL"], "error", "proto", "a protocol NVLS cannot run", t="dgx-h100:nodes=1"),
        _coll(["-a", "swing", "-o", "proto=Simple"], "error", "proto", "proto on a non-NCCL algorithm", t="torus:4x4"),
        _coll(["-o", "dims=4x4"], "error", "dims", "an auto option no candidate takes", t="dgx-h100:nodes=1"),
        _coll(["-a", "nvls_tree"], "error", "nodes", "NVLS-tree on one node", t="dgx-h100:nodes=1"),
        _coll(["-o", "proto=LL128"], "ok", defect="valid", t="dgx-h100:nodes=2"),
        _coll([], "error", "sm", "dgx: GPU generation out of range", t="dgx-h100:nodes=1,sm=5"),
        _coll([], "error", "ici_eff", "tpu-v4: efficiency above 1", t="tpu-v4:4x4x4,ici_eff=1.5"),
        _coll([], "error", "colour", "dgx: unknown key", t="dgx:nodes=2,gpus=8,nics=8,nvlink=300GB/s,nic=200Gbps,colour=red"),
        _coll([], "error", "nics", "dgx preset: bad override", t="dgx-h100:nodes=2,nics=3"),
        _coll([], "error", "npus", "memory", t="dgx-h100:nodes=3200000000000000"),
        # NCCL's algorithms on a cluster: their options and placement
        _coll(["-a", "nccl_ring", "-o", "channels=0"], "error", "channels", "zero channels", t="dgx-h100:nodes=2"),
        _coll(["-a", "nccl_ring", "-o", "channels=abc"], "error", "channels", "text channels", t="dgx-h100:nodes=2"),
        _coll(["-a", "nccl_ring", "-o", "nics_per_node=3"], "error", "nics_per_node", "NICs not dividing the GPUs",
              t="dgx-h100:nodes=2"),
        _coll(["-a", "nccl_tree", "-o", "gpus_per_node=3"], "error", "group size", "group not whole nodes",
              t="dgx-h100:nodes=2"),
        _coll(["-a", "nccl_tree", "-o", "chunks=0"], "error", "chunks", "zero tree chunks", t="dgx-h100:nodes=2"),
        _coll(["-a", "nvls"], "error", "algorithm", "NVLS across nodes without SHARP", t="dgx-h100:nodes=2"),
        _coll(["-a", "nvls"], "error", "nvls_rate", "negative switch reduction rate", t="dgx-h100:nodes=1,nvls_rate=-1GB/s"),
        _coll(["-a", "nvls"], "ok", defect="valid", t="dgx-h100:nodes=2,sharp"),
        # resource limits (memory tracebacks or runs killed at 60 s before)
        _coll([], "error", "npus", "memory", t="ring:1180591620717411303424"),
        _coll([], "error", "npus", "memory", t="torus:10000x10000"),
        _coll([], "error", "links", "memory", t="fully-connected:100000"),
        _coll([], "error", "npus", "hang", t="ring:10000000"),
        _coll([], "error", "npus", "hang", t="switch:10000000"),
        _coll([], "error", "npus", "hang", t="torus:1024x1024"),
        _coll([], "error", "npus", "hang", t="stack:Ring1000xRing1000xRing1000"),
        _coll(["-o", "chunks=1000000000"], "error", "chunks", "hang"),
        _c("collective", ["--limit", "nope=3", "collective", "-t", "ring:8"], "error", "--limit", defect="bad limit"),
        _c("collective", ["--limit", "npus=8", "collective", "-t", "ring:16", "-s", "1KiB"], "error", "npus=",
           defect="limit lowered"),
    ]
    return ok + err


def train_cases() -> list[Case]:
    """`fabricsim train`: YAML loading, fields, coercions, limits, outputs."""
    t = TINY_TRAIN
    ok = [_train(t, "ok", defect="valid"),
          _train(t, "ok", defect="valid", extra=("--trace-npus", "0-3")),
          _train(_sub(t, "latency: 1us", "latency: 0"), "ok", defect="valid")]
    err = [
        _train(b"network: {topology: '\xff\xfe'}\n", "error", "t.yaml", "non-UTF-8"),
        _train("a: " + "[" * 3000 + "]" * 3000 + "\n", "error", "t.yaml", "nesting"),
        _train("a:\n" + "".join("  " * (i + 1) + "b:\n" for i in range(1500)), "error", "t.yaml", "nesting"),
        _train(_sub(t, "iterations: 1", "iterations: 99999999999999999999999"), "error", "iterations", "int beyond 64 bits"),
        _train(t + "system:\n  scheduling: {priorities: !!set {DP, MP}}\n", "error", "t.yaml", "!!set / duplicate key"),
        _train(_sub(t, "system: {", "system: {scheduling: {priorities: !!set {DP, MP, IO, PP, other}}, "),
               "error", "priorities", "!!set"),
        _train(_sub(t, "system: {", "system: {scheduling: {priorities: []}, "), "error", "priorities", "empty priorities"),
        _train(_sub(t, "system: {", "system: {scheduling: {priorities: [DP, DP]}, "), "error", "priorities",
               "duplicate priorities"),
        _train(t + "workload: {model: resnet50}\n", "error", "workload", "duplicate key"),
        _train(_sub(t, "system: {", "system: {endpoint: {policy: nccl, ctas: 0}, "), "error", "ctas",
               "nccl endpoint without thread blocks"),
        _train(_sub(t, "system: {", "system: {endpoint: {policy: nccl, ctas: 200, sms: 132}, "), "error", "ctas",
               "nccl endpoint with more blocks than SMs"),
        _train(_sub(t, "system: {", "system: {endpoint: {policy: nccl, sms: 1.5}, "), "error", "sms",
               "nccl endpoint: fractional SMs"),
        _train(_sub(t, "latency: 1us}", "latency: 1us, algorithms: {all-reduce: 'ring,proto=LL9'}}"), "error",
               "proto", "unknown protocol in a config"),
        _train(t + "base_dir: /etc\n", "error", "base_dir", "hidden key"),
        _train(_sub(t, "latency: 1us", "latency: 100"), "error", "latency", "bare number"),
        _train(_sub(t, "bandwidth: 100GB/s", "bandwidth: 400"), "error", "bandwidth", "bare number"),
        _train(_sub(t, "efficiency: 0.5", "efficiency: true"), "error", "efficiency", "coercion"),
        _train(_sub(t, "iterations: 1", "iterations: 1.5"), "error", "iterations", "coercion"),
        _train(_sub(t, "iterations: 1", "iterations: '2'"), "error", "iterations", "coercion"),
        _train(_sub(t, "parallelism: {dp: 4}", "parallelism: {dp: 4}, mp: 2"), "error", "mp", "does not apply"),
        _train(_sub(t, "iterations: 1", "iterations: 1000000000"), "error", "iterations", "hang"),
        _train(_sub(t, "system: {", "system: {scheduling: {chunks: 1000000000}, "), "error", "chunks", "hang"),
        _train(_sub(t, "ring:4", "ring:1000000").replace("dp: 4", "dp: 1000000").replace("batch: 8", "batch: 1000000"),
               "error", "npus", "hang"),
        _train(_sub(t, "'ring:4'", "torus:1000x1000").replace("dp: 4", "dp: 1000000").replace("batch: 8", "batch: 1000000"),
               "error", "npus", "hang"),
        _train(_sub(t, "output: {", "output: {trace_npus: 0-99999999999, "), "error", "trace_npus", "range / field name"),
        _train(t, "error", "--trace-npus", "range expanded first", extra=("--trace-npus", "0-99999999999")),
        _train(t, "error", "--trace-npus", "beyond the NPUs, checked before the run", extra=("--trace-npus", "0-7")),
        _train(_sub(t, "'ring:4'", "'ring:4', nope: 1"), "error", "t.yaml", "error names the file"),
        _train(_sub(t, "latency: 1us", "latency: [1us, 2us, 3us]"), "error", "t.yaml", "error names the file"),
        _c("train", ["train", "/dev/zero", "-q"], "error", "/dev/zero", defect="memory"),
        _c("train", ["train", "{d}/missing.yaml", "-q"], "error", "missing.yaml", defect="missing file"),
        _c("train", ["train", "{d}", "-q"], "error", "", defect="folder as config"),
        _train(t, "error", "--out", "unwritable out", extra=("--out", "/proc/x")),
        _train(t, "error", "--out", "odd out", extra=("--out", "")),
        _train(t, "error", "--iterations", "negative override", extra=("-n", "-5")),
    ]
    # issue 18: transformers by shape, GPU presets, Megatron's options, the memory check
    g = ("network: {topology: 'switch:4', bandwidth: 300GB/s, latency: 1us}\n"
         "system: {npu: {gpu: a100}}\n"
         "workload: {model: {layers: 4, hidden: 256, heads: 8, seq: 128, vocab: 1000}, batch: 4, iterations: 1,\n"
         "  parallelism: {mp: 2, pp: 2, microbatches: 4, stage_split: layers, recompute: selective,\n"
         "                sequence_parallel: true, optimizer: adam}}\n"
         "output: {trace: false, plot: false}\n")
    ok.append(_train(g, "ok", defect="valid transformer by shape on an A100"))
    err += [
        _train(_sub(g, "gpu: a100", "gpu: a999"), "error", "gpu", "unknown GPU preset"),
        _train(_sub(g, "gpu: a100", "gpu: a100, peak: 1PFLOP/s"), "error", "peak", "two sources for one figure"),
        _train(_sub(g, "heads: 8", "heads: 7"), "error", "heads", "heads not dividing hidden"),
        _train(_sub(g, "layers: 4", "layers: 0"), "error", "layers", "zero layers"),
        _train(_sub(g, "layers: 4", "layers: 4, depth: 3"), "error", "depth", "unknown shape field"),
        _train(_sub(g, "recompute: selective", "recompute: some"), "error", "recompute", "unknown recompute"),
        _train(_sub(g, "mp: 2, pp: 2", "mp: 1, pp: 4"), "error", "sequence_parallel", "sequence parallel without mp"),
        _train(_sub(g, "stage_split: layers", "stage_split: layers, virtual_stages: 2").replace("microbatches: 4",
                                                                                            "microbatches: 3"),
               "error", "microbatches", "interleaving needs microbatches a multiple of pp"),
        _train(_sub(g, "stage_split: layers", "virtual_stages: 2"), "error", "stage_split", "interleaving by FLOPs"),
        _train(_sub(g, "layers: 4", "layers: 5"), "error", "stage_split", "blocks not splitting evenly"),
        _train(_sub(g, "gpu: a100", "gpu: a100, memory_check: maybe"), "error", "memory_check", "unknown check"),
        _train(_sub(g, "gpu: a100", "peak: 1PFLOP/s, memory_bandwidth: 1TB/s, memory: 1MiB"), "error", "memory",
               "a stage beyond the NPU's memory"),
        _train(_sub(t, "parallelism: {dp: 4}", "parallelism: {dp: 4, recompute: full}"), "error", "recompute",
               "recompute of a model without transformer blocks"),
        _train(_sub(g, "seq: 128", "seq: 128.5"), "error", "seq", "coercion"),
        _train(_sub(g, "iterations: 1,", "iterations: 1, fold: maybe,"), "error", "fold", "unknown fold"),
        _train(_sub(g, "gpu: a100", "peak: 1PFLOP/s, memory_bandwidth: 1TB/s, compute: kernels"), "error", "compute",
               "kernels without a gpu preset"),
        # issue 40: Megatron's asynchronous TP communication and fused attention
        _train(_sub(g, "optimizer: adam", "optimizer: adam, tp_overlap: maybe"), "error", "tp_overlap", "unknown switch"),
        _train(_sub(g, "optimizer: adam", "optimizer: adam, tp_overlap: 1"), "error", "tp_overlap", "coercion"),
        _train(_sub(g, "optimizer: adam", "optimizer: adam, attention: flash"), "error", "attention",
               "unknown attention"),
        _train(_sub(g, "optimizer: adam", "optimizer: adam, attention: fused"), "error", "attention",
               "fused attention on a GPU without measured rates"),
    ]
    ok.append(_train(_sub(g, "gpu: a100", "gpu: h100").replace("optimizer: adam", "optimizer: adam, attention: fused"),
                     "ok", defect="valid fused attention on an H100"))
    return ok + err


def traffic_cases() -> list[Case]:
    """`fabricsim traffic`: list items, self flows, counts, options, outputs."""
    t = TINY_TRAFFIC
    ok = [_traffic(t, "ok", defect="valid"), _traffic(t, "ok", defect="valid", extra=("--json",)),
          _traffic(t, "ok", defect="valid", extra=("--timeline", "{d}/tl.csv"))]
    err = [
        _traffic(_sub(t, "size: 1MiB, start: 0us}\n", "size: 1MiB, start: 0us, group: [a, b]}\n"), "error", "group",
                 "group names"),
        _traffic(_sub(t, "all-reduce, algorithm: ring, size: 1MiB, start: 0us}",
                      "all-reduce, algorithm: ring, size: 1MiB, start: 0us, group: [1.5, 2.7]}"), "error", "group", "coercion"),
        _traffic(_sub(t, "dst: 2", "dst: 0"), "error", "dst", "self flow"),
        _traffic(_sub(t, "algorithm: ring,", "algorithm: 'ring,proto=fast',"), "error", "proto", "unknown protocol"),
        _traffic(_sub(t, "dst: 2, size: 1MiB, start: 0us}", "dst: 2, size: 1MiB, start: 0us, count: 1000000000}"),
                 "error", "count", "memory"),
        _traffic(_sub(t, "algorithm: ring,", "algorithm: ring, options: {chunks: abc},"), "error", "chunks",
                 "option not parsed"),
        _traffic(_sub(t, "algorithm: ring,", "algorithm: ring, options: {dims: 3x3},"), "error", "dims", "option not taken"),
        _traffic(_sub(t, "algorithm: ring,", "algorithm: nope,"), "error", "collectives[0]", "list item named"),
        _traffic(b"topology: '\xff'\n", "error", "t.yaml", "non-UTF-8"),
        _traffic(t + "latency: 2us\n", "error", "latency", "duplicate key"),
        _traffic(t, "error", "--timeline", "input overwritten", extra=("--timeline", T)),
        _traffic(t, "error", "--timeline", "unwritable timeline", extra=("--timeline", "/proc/x/t.csv")),  # unwritable for root too
        _traffic(t, "error", "--timeline", "odd timeline", extra=("--timeline", "/")),
    ]
    return ok + err


def astra_cases() -> list[Case]:
    """`fabricsim astra`: JSON output, options, ASTRA-sim files."""
    net = (ASTRA / "networks" / "Ring_8.yml").read_text()
    ok = [_astra([], "ok", defect="valid"),
          _astra(["--model", "analytical", "--json"], "ok", defect="crash on valid input"),
          _astra(["--model", "flow", "--json"], "ok", defect="crash on valid input"),
          _astra(["--comm-group-configuration", "empty"], "ok", defect="valid")]
    err = [
        _astra(["--injection-scale", "nan"], "error", "injection-scale", "nan option"),
        _astra(["--injection-scale", "inf"], "error", "injection-scale", "inf option"),
        _astra(["--injection-scale", "-1"], "error", "injection-scale", "negative option"),
        _astra(["--injection-scale", "1e308"], "error", "injection-scale", "overflow (found by benchmarks/fuzz_inputs.py)"),
        _astra(["--comm-group-configuration", "{d}/empty_junk.json"], "error", "empty_junk", "'empty' path dropped",
               files=(("empty_junk.json", "not json"),)),
        _astra(["--comm-group-configuration", "{d}/empty_missing.json"], "error", "empty_missing", "'empty' path dropped"),
        _c("astra", ["astra", "--workload-configuration", f"{ASTRA}/workloads/all_reduce_8_1048576/x",
                     "--system-configuration", f"{ASTRA}/systems/sys_ring_1d_s4_a1.json",
                     "--network-configuration", "{d}/net.yml", "-q"], "error", "npus", defect="memory",
           files=(("net.yml", net.replace("8", "1000000000", 1) if "npus_count: [ 8 ]" not in net
             else net.replace("npus_count: [ 8 ]", "npus_count: [ 1000000000 ]")),)),
        _c("astra", ["astra", "--workload-configuration", f"{ASTRA}/workloads/all_reduce_8_1048576/x",
                     "--system-configuration", f"{ASTRA}/systems/sys_ring_1d_s4_a1.json",
                     "--network-configuration", "{d}/net.yml", "-q", "--model", "analytical", "--json"], "error",
           "latency", files=(("net.yml", net.replace("latency: [ 500.0 ]", "latency: [ 1e308 ]")),),
           defect="overflow (found by benchmarks/fuzz_inputs.py)"),
    ]
    return ok + err


def export_cases() -> list[Case]:
    """`fabricsim export chakra`: sources, counts, outputs."""
    ok = [_export(["-o", "{d}/ar", "-n", "4", "--collective", "all-reduce"], "ok", defect="valid")]
    err = [
        _export(["-o", "{d}/ar", "-n", "1000000000", "--collective", "all-reduce"], "error", "npus", "hang"),
        _export(["-o", "{d}/ar", "-n", "4", "--collective", "all-reduce", "--passes", "-5"], "error", "passes",
                "option does not apply"),
        _export(["-o", "{d}/ar", "-n", "4", "--text", f"{ROOT}/reference/astra-sim/legacy/Resnet50_DataParallel.txt",
                 "--passes", "1000000000"], "error", "passes", "hang"),
        _export(["-o", "", "-n", "4", "--collective", "all-reduce"], "error", "--output", "hidden files"),
        _export(["-o", "/proc/x/y", "-n", "4", "--collective", "all-reduce"], "error", "--output", "unwritable output"),
        _export(["-o", "{d}/ar", "--train", "{d}/t.yaml"], "error", "t.yaml", "non-UTF-8",
                files=(("t.yaml", b"network: '\xff'\n"),)),
    ]
    return ok + err


SWING = (ROOT / "configs" / "swing.yaml").read_text()
_RING_LAMBDA = 'lambda: "2*p/log2(p)"'


def _swing(formula: str, defect: str) -> Case:
    return _c("reproduce", ["reproduce", "swing", "--quick", "--config", "{d}/s.yaml", "--out", "{d}/o", "-q"], "error",
              "lambda", (("s.yaml", _sub(SWING, _RING_LAMBDA, f"lambda: {formula!r}")),), defect)


def reproduce_cases() -> list[Case]:
    """`fabricsim reproduce`: configs (Swing's Table 2 formulas are evaluated: bounded) and outputs."""
    return [
        _swing("9**9**9**9", "formula hangs"),
        _swing("2.0**10000", "formula overflows"),
        _swing("p+" * 50000 + "1", "100k-character formula"),
        _c("reproduce", ["reproduce", "swing", "--quick", "--config", "{d}/s.yaml", "--out", "{d}/o", "-q"], "error",
           "s.yaml", (("s.yaml", b"\xff\xfe\x00"),), "non-UTF-8"),
        _c("reproduce", ["reproduce", "swing", "--quick", "--out", "/proc/x", "-q"], "error", "--out", (), "unwritable out"),
    ]


JOB = (ROOT / "configs" / "topoopt-job.yaml").read_text()


def topology_cases() -> list[Case]:
    """`fabricsim topology optimize` (found by benchmarks/fuzz_inputs.py): seeds, counts, limits."""
    def job(text, expect, field, defect, extra=()):
        return _c("topology optimize", ["topology", "optimize", "{d}/j.yaml", "--out", "{d}/o", "-q", *extra], expect,
                  field, (("j.yaml", text),), defect)

    return [job(_sub(JOB, "seed: 0", "seed: -1"), "error", "seed", "negative seed (numpy ValueError)"),
            job(JOB, "error", "--seed", "negative seed (numpy ValueError)", ("--seed", "-5")),
            job(_sub(JOB, "steps: 100", "steps: 1.0e+20"), "error", "steps", "coercion, hang"),
            job(_sub(JOB, "steps: 100", "steps: 100000000"), "error", "steps", "hang"),
            job(_sub(JOB, "servers: 32", "servers: 1048576"), "error", "servers", "memory")]


def sweep_cases() -> list[Case]:
    """`fabricsim sweep --dry-run`: seeds of random axes."""
    text = ("name: s\nkind: collective\nbase: {collective: all-reduce, latency: 500ns, topology: 'ring:8'}\n"
            "axes:\n  - random: {n: 2, seed: -1, fields: {size: {choice: [1KiB, 1MiB]}}}\n")
    return [_c("sweep", ["sweep", "{d}/s.yaml", "--out", "{d}/o", "--dry-run"], "error", "seed", (("s.yaml", text),),
               "negative seed (numpy ValueError)")]


def all_cases() -> list[Case]:
    """Every case of the table, command by command."""
    return (collective_cases() + train_cases() + traffic_cases() + astra_cases() + export_cases() + reproduce_cases()
            + topology_cases() + sweep_cases())


# ---------------------------------------------------------------- issue 46: sweep and plot, round three
_S46 = "name: s\nkind: collective\nbase: {collective: all-reduce, latency: 500ns, topology: 'ring:8', size: 1MiB}\naxes:\n"


def _sweep46(axes, expect, field, defect, extra=("--dry-run",), out="{d}/o", name="s.yaml"):
    return _c("sweep", ["sweep", f"{{d}}/{name}", "--out", out, "-q", *extra], expect, field,
              ((name, _S46 + axes),), defect)


def sweep_round3_cases() -> list[Case]:
    """`fabricsim sweep` and `plot` (issue 46 defects 5-8, 12): counts, --dask, validation, --out."""
    grid7 = "".join(f"  - grid: {{size: [{', '.join(f'{2**k}KiB' for k in range(10))}]}}\n" for _ in range(5))
    grid7 = ("  - grid: {bandwidth: [" + ", ".join(f"{10 * k}Gbps" for k in range(1, 11)) + "]}\n"
             "  - grid: {latency: [" + ", ".join(f"{k}ns" for k in range(1, 11)) + "]}\n" + grid7)
    one = "  - grid: {algorithm: [ring, direct]}\n"
    return [
        _sweep46(grid7, "ok", "", "10^7 combinations, 1,000 points: dry run in seconds"),
        _sweep46("  - random: {n: 100000000, seed: 1, fields: {size: {choice: [1KiB, 1MiB]}}}\n", "error", "axes",
                 "no limit on points"),
        _sweep46("  - random: {n: 3, seed: 1, fields: {size: {uniform: [1000, 100000]}}}\n", "error", "axes.size",
                 "uniform size passed the dry run (fractional bytes)"),
        _sweep46("  - grid: {algorithm: [ring, nvls]}\n", "error", "axes.algorithm", "nvls on ring:8 failed at run time"),
        _sweep46("  - random: {n: 3, seed: 1, fields: {bandwidth: {loguniform: [1.0e+9, 1.0e+11]}}}\n", "error",
                 "axes.bandwidth", "bare-number bandwidth ran (collective -B refuses it)"),
        _sweep46(one, "error", "--dask", "--dask without a port: ValueError", extra=("--dask", "nope")),
        _c("reproduce swing", ["reproduce", "swing", "--quick", "-q", "--out", "{d}/o", "--dask", "nope"], "error",
           "--dask", (), "--dask without a port: ValueError"),
        _sweep46(one, "error", "--out", "--out onto a file: 'File exists'", extra=(), out="{d}/s.yaml"),
        _sweep46(one, "error", "--out", "--out onto /proc/x: 'No such file or directory'", extra=(), out="/proc/x"),
        _sweep46(one, "error", "--out", "--out into a folder of other files", extra=(), out="{d}"),
        _c("plot", ["plot", "{d}", "--x", "size_bytes", "--y", "busbw_Bps"], "error", "--results", (),
           "plot of an empty folder: 'accepted: ' and nothing"),
    ]


_ALL_CASES_BEFORE_46 = all_cases


def all_cases() -> list[Case]:  # noqa: F811 - the table grows at its end
    """Every case of the table, command by command, with issue 46's sweep rows."""
    return _ALL_CASES_BEFORE_46() + sweep_round3_cases()


# ---- issue 46, "Robustness, round three" (tests/test_hostile_round3.py has the closed forms) -------

BASE3 = """\
network: {topology: 'switch:4', bandwidth: 300GB/s, latency: 1us}
system: {npu: {gpu: a100}}
workload:
  model: {layers: 4, hidden: 256, heads: 8, seq: 128, vocab: 1000}
  batch: 4
  iterations: 1
  parallelism: {mp: 2, pp: 2, microbatches: 4, recompute: selective, sequence_parallel: true, optimizer: adam}
output: {trace: false, plot: false}
"""


def round3_cases() -> list[Case]:
    """Issue 46 (round three): mp off Megatron's layout, graphs sized before building, options given
    twice, options contradicting the topology, absurd answers, fields named as given."""
    job = (ROOT / "configs" / "topoopt-job.yaml").read_text()
    return [
        _train(BASE3, "ok", defect="valid"),
        _train(_sub(BASE3, "heads: 8", "heads: 1"), "error", "workload.model.heads", "mp off Megatron's layout"),
        _train(_sub(BASE3, "vocab: 1000}", "vocab: 1000, ffn: 3}"), "error", "workload.model.ffn",
               "mp off Megatron's layout"),
        _train(_sub(BASE3, "heads: 8", "heads: 8, kv_heads: 1"), "error", "workload.model.kv_heads",
               "mp off Megatron's layout"),
        _export(["-o", "{d}/ch", "--train", "{d}/t.yaml"], "error", "workload.model.heads", "mp off Megatron's layout",
                files=(("t.yaml", _sub(BASE3, "heads: 8", "heads: 1")),)),
        _train(_sub(BASE3, "layers: 4", "layers: 100000000"), "error", "workload.model.layers",
               "tasks limit before the model is built (memory)"),
        _c("collective", ["--limit", "npus=8", "--limit", "npus=16", "collective", "-t", "ring:12", "-s", "1MiB", "-q"],
           "error", "--limit", defect="option given twice"),
        _coll(["-s", "2MiB"], "error", "--sizes", "option given twice"),
        _coll(["-c", "broadcast", "-a", "ring", "-o", "chunks=2", "-o", "chunks=4"], "error", "--option",
              "option given twice"),
        _train(BASE3, "error", "--endpoint", "endpoint field given twice",
               extra=("--endpoint", "npu,units=0.2,units=0.3,memory=0.1")),
        _coll(["-a", "nccl_tree", "-o", "gpus_per_node=16"], "error", "gpus_per_node", "contradicts the topology",
              t="dgx-h100:nodes=2"),
        _coll(["-a", "nccl_tree", "-o", "gpus_per_node=8"], "ok", defect="valid", t="dgx-h100:nodes=2"),
        _train(BASE3, "error", "--endpoint: units", "absurd answer (1e294 s)",
               extra=("--endpoint", "npu,units=1e-300,memory=1e-300")),
        _c("collective", ["collective", "-t", "ring:8", "-B", "100bps", "-s", "1GiB", "-q"], "error",
           "--bandwidth 100bps", defect="absurd answer (over a year)"),
        _c("topology optimize", ["topology", "optimize", "{d}/j.yaml", "--out", "{d}/o", "-q"], "error",
           "j.yaml: link_bandwidth", (("j.yaml", _sub(job, "link_bandwidth: 100Gbps", "link_bandwidth: 1bps")),),
           "wrong field named"),
        _coll(["-a", "nvls"], "error", "'nvls'", "wrong value named", t="dgx-a100:nodes=2"),
        _train(_sub(BASE3, "{gpu: a100}", "{gpu: a100, efficiency: 5e-1}"), "error", "exponent without a dot",
               "YAML 1.1 text not said"),
    ]


_ALL_CASES_BEFORE_ROUND3 = all_cases


def all_cases() -> list[Case]:  # noqa: F811 - the table grows at its end
    """Every case of the table, with issue 46's round-three rows (`round3_cases`)."""
    return _ALL_CASES_BEFORE_ROUND3() + round3_cases()
