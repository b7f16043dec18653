"""fabricsim's flow model against SimGrid, whole process against whole process.

The case is bench_flow.py's first one: 10,000 concurrent flows of 100 MB between random pairs on an
8x8 torus (dimension-order routing, 100 Gb/s links, 1 us), seed 0, every flow starting at 0.
Three programs compute it, each as its own process, timed from the outside (wall clock, and user
and system CPU and peak RSS from os.wait4, all threads included):

(a) fabricsim: `.venv/bin/python -c ...`: interpreter start, imports (numpy, fabricsim), building
    the torus and the flows, routing them, simulate_flows (max-min, pipelined), writing the
    finish times (.npy). The simulate_flows call alone is reported too (timed inside the child).
(b) SimGrid's Python bindings: `/usr/bin/python3 tests/simgrid_runner.py IN.json OUT.json`
    (Debian's python3-simgrid 3.32; the bindings force one thread context per actor): interpreter
    start, `import simgrid`, reading the JSON, building the platform (64 hosts, 256 links, one
    route per used pair), 20,000 actors (a sender and a receiver per flow), the simulation,
    writing the JSON.
(c) SimGrid's C++ S4U interface: benchmarks/simgrid/flows_s4u.cpp (compiled here with g++ -O2
    against Debian's libsimgrid-dev 3.32), `--cfg=contexts/factory:raw`: process start, reading
    the same input as plain text, the same platform, actors and simulation, writing the times.

The SimGrid inputs carry the routes fabricsim's torus computes (`Topology.route`), written by this
script beforehand and not timed; fabricsim routes inside its timed process. Both SimGrid programs
run simgrid_runner.py's configuration (CM02 without TCP factors, cross traffic or window bound:
max-min with links of zero latency inside SimGrid). Two compositions of latency and transfer,
each the same model on all three sides (tests/test_flow_simgrid.py: finish times agree within
1e-4 relative; the agreement measured here is reported):

- "last" (bench_flow.py's case; fabricsim's composition): every flow sends from 0 at its max-min
  rate, its last byte arrives a path latency (1-8 us) after it left. SimGrid: runner mode "last".
- "first" (SimGrid's own composition: a flow joins the sharing after its route latency): SimGrid
  runner mode "first"; fabricsim is given every flow's start delayed by its path latency (routing
  once more in the timed process) and its `sent` times are compared. Flows join at 8 distinct
  times, which makes about 2.7 times as many events on both sides.

Short runs are repeated (median of --repeat, default 3, by wall time; user/sys of that run); a
program whose first run takes over 60 s runs once. Without g++ or SimGrid's headers (Debian's
libsimgrid-dev) (c) is skipped with the reason printed; without `import simgrid` in the system
Python, (b).

Run: `.venv/bin/python benchmarks/bench_simgrid.py` -> benchmarks/results/simgrid.json
(`--repeat N`; `--no-simgrid-python` and `--latency last|first` make a partial run, printed only)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _results import write_results  # benchmarks/ is on sys.path when run as a script


ROOT = Path(__file__).resolve().parent.parent
RUNNER = ROOT / "tests" / "simgrid_runner.py"
CPP_SRC = Path(__file__).resolve().parent / "simgrid" / "flows_s4u.cpp"
CPP_BIN = CPP_SRC.parent / "build" / "flows_s4u"  # build/ is ignored by git
SYSTEM_PYTHON = os.environ.get("FABRICSIM_SIMGRID_PYTHON", "/usr/bin/python3")
CXX = os.environ.get("CXX", "g++")
RUN_ONCE_ABOVE_S = 60.0

# The case, as bench_flow.random_flows builds it. (a) runs exactly this in its own process;
# the parent runs it too, to build SimGrid's input from the same flows and routes.
CASE = """
import numpy as np
from fabricsim.topology import torus
topo = torus((8, 8), 100e9 / 8, 1e-6)
rng = np.random.default_rng(0)
n = 10_000
src = rng.integers(0, 64, n)
dst = (src + rng.integers(1, 64, n)) % 64
size = np.full(n, 100e6)
"""

# argv: OUT.npy, composition ("last": bench_flow's case; "first": starts delayed by path latency).
FABRICSIM_CHILD = CASE + """
import json, sys, time
from fabricsim.network.flow import Flows, simulate_flows
t0 = time.perf_counter()
if sys.argv[2] == "last":
    res = simulate_flows(topo, Flows(src, dst, size))
else:
    ptr, links = topo.route(src, dst)
    res = simulate_flows(topo, Flows(src, dst, size, start=np.add.reduceat(topo.link_lat[links], ptr[:-1])))
t_sim = time.perf_counter() - t0
np.save(sys.argv[1], res.finish if sys.argv[2] == "last" else res.sent)
print(json.dumps({"simulate_s": t_sim, "events": int(res.events), "makespan_s": float(res.makespan)}))
"""

# tests/simgrid_runner.py's BASE_CONFIG, read from the file so that both SimGrid programs run
# the same configuration (the runner adds it itself; the C++ program gets it in its input).
def runner_base_config() -> list[str]:
    import ast

    tree = ast.parse(RUNNER.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "BASE_CONFIG" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise SystemExit(f"BASE_CONFIG not found in {RUNNER}")


def build_spec() -> dict:
    """simgrid_runner.py's input for the case (every flow with its fabricsim route)."""
    ns: dict = {}
    exec(CASE, ns)  # noqa: S102 -- the same lines the fabricsim child runs
    topo, src, dst, size = ns["topo"], ns["src"], ns["dst"], ns["size"]
    ptr, links = topo.route(src, dst)
    return {
        "hosts": int(topo.n_nodes),
        "links": [{"id": i, "bw": float(topo.link_bw[i]), "lat": float(topo.link_lat[i])} for i in range(topo.n_links)],
        "flows": [{"src": int(src[i]), "dst": int(dst[i]), "size": int(round(size[i])), "start": 0.0,
                   "route": links[ptr[i]:ptr[i + 1]].tolist()} for i in range(len(src))],
    }


def spec_to_text(spec: dict, mode: str) -> str:
    """The same input in flows_s4u.cpp's plain-text format."""
    config = runner_base_config() + list(spec.get("config", []))
    lines = ["fabricsim-simgrid-flows 1", f"mode {mode}", f"config {len(config)}", *config,
             f"hosts {spec['hosts']}", f"links {len(spec['links'])}"]
    lines += [f"{link['id']} {link['bw']!r} {link['lat']!r}" for link in spec["links"]]
    lines.append(f"flows {len(spec['flows'])}")
    for f in spec["flows"]:
        route = f["route"] if f["src"] != f["dst"] else []
        lines.append(" ".join(map(str, [f["src"], f["dst"], int(round(f["size"])), repr(float(f["start"])), len(route),
                                        *route])))
    return "\n".join(lines) + "\n"


def run_process(cmd: list[str], workdir: Path, label: str) -> dict:
    """Run cmd as a child; wall clock around it, CPU and peak memory from os.wait4."""
    out_path, err_path = workdir / f"{label}.stdout", workdir / f"{label}.stderr"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{label}: exit {proc.returncode}: {' '.join(cmd)}\n{err_path.read_text()[-3000:]}")
    return {"wall_s": wall, "user_s": ru.ru_utime, "sys_s": ru.ru_stime, "peak_rss_mib": ru.ru_maxrss / 1024,
            "stdout": out_path.read_text(), "stderr": err_path.read_text()}


def repeated(cmd: list[str], workdir: Path, label: str, repeat: int) -> tuple[dict, list[dict]]:
    """Median run by wall time (one run if the first takes over RUN_ONCE_ABOVE_S)."""
    runs = [run_process(cmd, workdir, label)]
    print(f"  {label}: run 1: {runs[0]['wall_s']:.2f} s wall", flush=True)
    while len(runs) < repeat and runs[0]["wall_s"] <= RUN_ONCE_ABOVE_S:
        runs.append(run_process(cmd, workdir, label))
        print(f"  {label}: run {len(runs)}: {runs[-1]['wall_s']:.2f} s wall", flush=True)
    order = sorted(range(len(runs)), key=lambda i: runs[i]["wall_s"])
    return runs[order[(len(runs) - 1) // 2]], runs


def build_cpp() -> tuple[Path | None, str]:
    """Compile flows_s4u.cpp (when newer than the binary); (path, '') or (None, why not)."""
    if CPP_BIN.exists() and CPP_BIN.stat().st_mtime >= CPP_SRC.stat().st_mtime:
        return CPP_BIN, ""
    if shutil.which(CXX) is None:
        return None, f"no C++ compiler ({CXX})"
    CPP_BIN.parent.mkdir(parents=True, exist_ok=True)
    cmd = [CXX, "-O2", "-std=c++17", str(CPP_SRC), "-o", str(CPP_BIN), "-lsimgrid"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines() or ["failed"]
        hint = " (SimGrid's C++ headers: apt-get install libsimgrid-dev)" if "simgrid" in r.stderr else ""
        return None, f"{' '.join(cmd)} failed{hint}: {lines[0]}"
    print(f"  built {CPP_BIN.relative_to(ROOT)}: {' '.join(cmd)}")
    return CPP_BIN, ""


def simgrid_python_status() -> str:
    """'' when the system Python imports simgrid, else why not."""
    if not Path(SYSTEM_PYTHON).exists():
        return f"{SYSTEM_PYTHON} not found"
    r = subprocess.run([SYSTEM_PYTHON, "-c", "import simgrid"], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        return f"{SYSTEM_PYTHON} cannot import simgrid (apt-get install python3-simgrid)"
    return ""


def agreement(finish: np.ndarray, reference: np.ndarray) -> dict:
    rel = np.abs(finish - reference) / np.abs(reference)
    return {"max_rel_diff": float(rel.max()), "p99_rel_diff": float(np.quantile(rel, 0.99)),
            "median_rel_diff": float(np.median(rel)), "worst_flow": int(rel.argmax())}


def row(side: str, includes: str, best: dict, runs: list[dict], **extra) -> dict:
    return {"side": side, "includes": includes, "runs": len(runs), "wall_s": round(best["wall_s"], 3),
            "user_s": round(best["user_s"], 3), "sys_s": round(best["sys_s"], 3),
            "cpu_s": round(best["user_s"] + best["sys_s"], 3), "peak_rss_mib": round(best["peak_rss_mib"], 1),
            "wall_s_all": [round(r["wall_s"], 3) for r in runs], **extra}


COMPOSITION = {"last": "latency after the transfer (fabricsim's composition; bench_flow.py's case)",
               "first": "latency before the transfer (SimGrid's composition; fabricsim: starts + path latency)"}


def run_case(mode: str, spec: dict, work: Path, args, binary: Path | None, skipped: dict) -> list[dict]:
    """The three programs on one composition; rows with ratios to fabricsim."""
    rows = []
    n = len(spec["flows"])
    print(f"== {COMPOSITION[mode]}", flush=True)

    fab_npy = work / f"fabricsim_{mode}.npy"
    best, runs = repeated([sys.executable, "-c", FABRICSIM_CHILD, str(fab_npy), mode], work, f"fabricsim_{mode}",
                          args.repeat)
    inner = [json.loads(r["stdout"]) for r in runs]
    ref = np.load(fab_npy)
    what = "simulate_flows" if mode == "last" else "routing + simulate_flows (starts + path latency)"
    rows.append(row("fabricsim (flow model)", "python start, imports, topology, flows, routing, simulate_flows, "
                    "writing times", best, runs, composition=mode,
                    simulate_call_s=round(float(np.median([i["simulate_s"] for i in inner])), 3),
                    simulate_call_what=what, simulate_call_s_all=[round(i["simulate_s"], 3) for i in inner],
                    events=inner[0]["events"], makespan_s=inner[0]["makespan_s"]))

    if "simgrid_python" not in skipped:
        inp, out = work / f"spec_{mode}.json", work / f"simgrid_py_{mode}.json"
        inp.write_text(json.dumps({**spec, "latency": mode}))
        best, runs = repeated([SYSTEM_PYTHON, str(RUNNER), str(inp), str(out)], work, f"simgrid_python_{mode}",
                              args.repeat)
        res = json.loads(out.read_text())
        rows.append(row("SimGrid 3.32, Python bindings (thread contexts)",
                        "python start, import simgrid, reading JSON, platform, 20,000 actors, simulation, "
                        "writing JSON", best, runs, composition=mode,
                        runner_wall_s=round(res["wall_s"], 3),
                        agreement_with_fabricsim=agreement(np.array(res["finish"]), ref)))

    if binary is not None:
        inp, out = work / f"spec_{mode}.txt", work / f"simgrid_cpp_{mode}.txt"
        inp.write_text(spec_to_text(spec, mode))
        try:
            best, runs = repeated([str(binary), str(inp), str(out), "--cfg=contexts/factory:raw"], work,
                                  f"simgrid_cpp_{mode}", args.repeat)
        except RuntimeError as exc:  # e.g. a binary built before libsimgrid went away
            print(f"(c) SimGrid C++ S4U: skipped: {exc}", flush=True)
            skipped[f"simgrid_cpp_{mode}"] = str(exc)
            binary = None
    if binary is not None:
        finish = np.loadtxt(out, ndmin=2)[:, 0]
        assert len(finish) == n
        inner = [json.loads(r["stdout"]) for r in runs]
        rows.append(row("SimGrid 3.32, C++ S4U (raw contexts)",
                        "process start, reading text input, platform, 20,000 actors, simulation, "
                        "writing times", best, runs, composition=mode,
                        engine_run_s=round(float(np.median([i["run_s"] for i in inner])), 3),
                        setup_s=round(float(np.median([i["setup_s"] for i in inner])), 3),
                        agreement_with_fabricsim=agreement(finish, ref)))

    fab = rows[0]
    for r in rows[1:]:
        r["wall_ratio_vs_fabricsim"] = round(r["wall_s"] / fab["wall_s"], 2)
        r["user_ratio_vs_fabricsim"] = round(r["user_s"] / fab["user_s"], 2)
        r["cpu_ratio_vs_fabricsim"] = round(r["cpu_s"] / fab["cpu_s"], 2)
    return rows


def print_table(rows: list[dict], repeat: int) -> None:
    print(f"\n10,000 flows x 100 MB, 8x8 torus, whole processes (median of up to {repeat} runs by wall time; "
          "ratios: this program / fabricsim)")
    head = (f"{'latency':<8} {'program':<48} {'wall s':>8} {'user s':>8} {'sys s':>8} {'RSS MiB':>8} "
            f"{'wall x':>7} {'user x':>7} {'cpu x':>7} {'max rel diff':>13}")
    print(head)
    print("-" * len(head))
    for r in rows:
        diff = r.get("agreement_with_fabricsim", {}).get("max_rel_diff")
        print(f"{r['composition']:<8} {r['side']:<48} {r['wall_s']:>8.2f} {r['user_s']:>8.2f} {r['sys_s']:>8.2f} "
              f"{r['peak_rss_mib']:>8.0f} {r.get('wall_ratio_vs_fabricsim', 1.0):>7.2f} "
              f"{r.get('user_ratio_vs_fabricsim', 1.0):>7.2f} {r.get('cpu_ratio_vs_fabricsim', 1.0):>7.2f} "
              f"{'' if diff is None else f'{diff:.1e}':>13}")
    print("inside the processes (wall):")
    for r in rows:
        if "simulate_call_s" in r:
            print(f"  latency '{r['composition']}': fabricsim {r['simulate_call_what']} {r['simulate_call_s']:.2f} s "
                  f"({r['events']} events, makespan {r['makespan_s']:.6f} s)")
        if "engine_run_s" in r:
            print(f"  latency '{r['composition']}': SimGrid C++ Engine::run {r['engine_run_s']:.2f} s "
                  f"(reading, platform and actors before it {r['setup_s']:.2f} s)")
        if "runner_wall_s" in r:
            print(f"  latency '{r['composition']}': SimGrid Python simgrid_runner.run (platform, actors, simulation) "
                  f"{r['runner_wall_s']:.2f} s")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs of each short program (median by wall time)")
    ap.add_argument("--no-simgrid-python", action="store_true", help="skip (b), SimGrid's Python bindings (~3 min)")
    ap.add_argument("--latency", choices=["last", "first", "both"], default="both",
                    help="which composition(s) to run (default both)")
    args = ap.parse_args(argv)

    skipped: dict = {}
    why = "--no-simgrid-python" if args.no_simgrid_python else simgrid_python_status()
    if why:
        print(f"(b) SimGrid Python bindings: skipped: {why}", flush=True)
        skipped["simgrid_python"] = why
    binary, why = build_cpp()
    if binary is None:
        print(f"(c) SimGrid C++ S4U: skipped: {why}", flush=True)
        skipped["simgrid_cpp"] = why

    spec = build_spec()
    load_before = os.getloadavg()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench_simgrid_") as tmp:
        for mode in (("last", "first") if args.latency == "both" else (args.latency,)):
            rows += run_case(mode, spec, Path(tmp), args, binary, skipped)

    load = {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]}
    print_table(rows, args.repeat)
    print(f"load average (1, 5, 15 min) before {load['before']}, after {load['after']} on {os.cpu_count()} CPUs: "
          "other work on the machine stretches the walls, less the CPU times")
    for k, why in skipped.items():
        print(f"skipped {k}: {why}")
    if args.no_simgrid_python or args.latency != "both":
        print("partial run (--no-simgrid-python or --latency): results/simgrid.json not written")
        return {"rows": rows, "skipped": skipped}
    return write_results("simgrid", "fabricsim flow model vs SimGrid, whole process", {
        "case": f"{len(spec['flows'])} random flows, 100 MB, 8x8 torus (100 Gb/s, 1 us), seed 0, start 0",
        "simgrid_config": runner_base_config(), "compositions": COMPOSITION, "load_average": load, "rows": rows,
        "skipped": skipped})


if __name__ == "__main__":
    main()
