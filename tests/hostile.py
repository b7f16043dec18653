"""Hostile inputs for every command, and the harness that runs them under time and memory caps.

A case is a command line (with files it needs written first) and what must happen: `ok` (exit 0
with output, nothing on stderr but our own lines) or `error` (exit 2, exactly one stderr line
`fabricsim: error: ...` that names `field`). `run_cases` runs a list of cases in ONE child
process (address space capped, each case under an alarm) so a defect that allocates without
bound or never returns is recorded as `memory` or `hang`, not a dead test run.

Outcomes: ok, error (as expected) and the defects: traceback, hang, memory, silent (accepted
what must be refused), refused (an `ok` case refused), not-one-line, wrong-field, stderr-noise.

Used by tests/test_hostile_inputs.py (every case, asserted) and benchmarks/fuzz_inputs.py (the
table of inputs tried per command, with generated inputs added).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASTRA = ROOT / "reference" / "astra-sim"

TINY_TRAIN = """\
network: {topology: 'ring:4', bandwidth: 100GB/s, latency: 1us}
system: {npu: {peak: 100TFLOP/s, memory_bandwidth: 1TB/s, efficiency: 0.5}}
workload: {model: resnet50, batch: 8, iterations: 1, parallelism: {dp: 4}}
output: {trace: false, plot: false}
"""

TINY_TRAFFIC = """\
topology: 'ring:4'
bandwidth: 100GB/s
latency: 1us
flows:
  - {name: f, src: 0, dst: 2, size: 1MiB, start: 0us}
collectives:
  - {name: c, collective: all-reduce, algorithm: ring, size: 1MiB, start: 0us}
"""

ASTRA_ARGS = ["astra", "--workload-configuration", f"{ASTRA}/workloads/all_reduce_8_1048576/x",
              "--system-configuration", f"{ASTRA}/systems/sys_ring_1d_s4_a1.json",
              "--network-configuration", f"{ASTRA}/networks/Ring_8.yml", "-q"]


@dataclass(frozen=True)
class Case:
    """One hostile input.

    Parameters
    ----------
    command : str
        The command it exercises (the table's row).
    argv : tuple of str
        Arguments after `fabricsim`; `{d}` is replaced by the case's own empty folder.
    expect : str
        `ok`, `error`, or `any` (generated inputs: exit 0, or exit 2 with one line).
    field : str
        A substring the one error line must contain (the field it names); `` for any.
    files : tuple of (str, str or bytes)
        Files written into the case's folder first (name, content).
    defect : str
        What it regresses (the defect in issue 17, or `valid` for inputs that must keep working).
    """

    command: str
    argv: tuple[str, ...]
    expect: str
    field: str = ""
    files: tuple[tuple[str, str | bytes], ...] = ()
    defect: str = ""

    @property
    def id(self) -> str:
        """A short readable id for pytest."""
        return " ".join(self.argv)[:90]


@dataclass
class Outcome:
    """What a case did: its class, exit code, the first stderr lines, and seconds taken."""

    verdict: str
    rc: int | None
    err: str = ""
    seconds: float = 0.0
    case: dict = field(default_factory=dict)


def classify(case: Case, rc: int | None, out: str, err: str, how: str = "") -> str:
    """The verdict of one run.

    Parameters
    ----------
    case : Case
        The case.
    rc : int or None
        Exit code (None when it did not return).
    out, err : str
        Its stdout and stderr.
    how : str
        `hang` or `memory` when the harness stopped it.

    Returns
    -------
    str
        `ok`, `error` (both as expected) or a defect class.
    """
    if how:
        return how
    if "Traceback" in err or "MemoryError" in err or rc not in (0, 2):
        return "memory" if "MemoryError" in err else "traceback"
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if rc == 0:
        if case.expect == "error":  # `any` (generated inputs): either ending is fine
            return "silent"
        noise = [ln for ln in lines if "Warning" in ln or "warning:" in ln.lower() and "fabricsim" not in ln]
        return "stderr-noise" if noise else "ok"
    if case.expect == "ok":
        return "refused"
    if len(lines) != 1 or not lines[0].startswith("fabricsim: error:"):
        return "not-one-line"
    if case.field and case.field.lower() not in lines[0].lower():
        return "wrong-field"
    return "error"


def run_cases(cases: list[Case], workdir: Path, timeout_s: float = 30.0, memory_bytes: int = 3 * 2**30,
              env: dict | None = None) -> list[Outcome]:
    """Run cases in one child process with its address space capped and each case under an alarm.

    Parameters
    ----------
    cases : list of Case
        What to run.
    workdir : Path
        A folder for the cases' own folders.
    timeout_s : float
        Seconds one case may take before it counts as a hang.
    memory_bytes : int
        Address-space cap of the child (bytes); exceeding it is a `memory` outcome.
    env : dict, optional
        Extra environment variables for the child.

    Returns
    -------
    list of Outcome
        One per case, in order. A case that kills the child is recorded and the rest rerun.
    """
    outcomes: list[Outcome] = []
    todo = list(enumerate(cases))
    while todo:
        spec = workdir / f"cases-{len(outcomes)}.json"
        spec.write_text(json.dumps({"cases": [asdict(c) | {"index": i} for i, c in todo], "workdir": str(workdir),
                                    "timeout_s": timeout_s, "memory_bytes": memory_bytes}, default=_bytes_json))
        res_path = spec.with_suffix(".out.jsonl")
        proc = subprocess.run([sys.executable, __file__, str(spec), str(res_path)], capture_output=True, text=True,
                              env={**os.environ, **(env or {})}, timeout=timeout_s * len(todo) + 120)
        done = [json.loads(ln) for ln in res_path.read_text().splitlines()] if res_path.exists() else []
        for d in done:
            outcomes.append(Outcome(d["verdict"], d["rc"], d["err"], d["seconds"], d["case"]))
        rest = todo[len(done):]
        if rest:  # the child died inside rest[0]: record it, go on with the others
            i, c = rest[0]
            outcomes.append(Outcome("memory" if proc.returncode in (-9, 137) else "crash", proc.returncode,
                                    proc.stderr[-500:], 0.0, asdict(c) | {"index": i}))
            rest = rest[1:]
        todo = rest
    return outcomes


def _bytes_json(x):
    if isinstance(x, bytes):
        return {"__bytes__": x.hex()}
    raise TypeError(type(x))


def _child(spec_path: str, out_path: str) -> None:
    """The child: run each case in-process, append one JSON line per case (flushed)."""
    import contextlib
    import io
    import resource
    import signal
    import time

    spec = json.loads(Path(spec_path).read_text())
    resource.setrlimit(resource.RLIMIT_AS, (spec["memory_bytes"], spec["memory_bytes"]))
    from fabricsim.cli import main

    class _Hang(BaseException):
        pass

    def _alarm(*_):
        raise _Hang()

    signal.signal(signal.SIGALRM, _alarm)
    home = os.getcwd()
    with open(out_path, "a") as sink:
        for d in spec["cases"]:
            index = d.pop("index")
            files = tuple((n, bytes.fromhex(c["__bytes__"]) if isinstance(c, dict) else c) for n, c in d.pop("files"))
            case = Case(**{**d, "argv": tuple(d["argv"]), "files": files})
            folder = Path(spec["workdir"]) / f"case{index}"
            folder.mkdir(parents=True, exist_ok=True)
            for name, content in case.files:
                p = folder / name
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(content) if isinstance(content, bytes) else p.write_text(content)
            argv = [a.replace("{d}", str(folder)) for a in case.argv]
            out, err = io.StringIO(), io.StringIO()
            how, rc = "", None
            t0 = time.perf_counter()
            os.chdir(folder)
            signal.setitimer(signal.ITIMER_REAL, spec["timeout_s"])
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    rc = main(argv)
            except _Hang:
                how = "hang"
            except MemoryError:
                how = "memory"
            except BaseException as e:  # noqa: BLE001 - anything escaping main() is a defect
                import traceback

                err.write("Traceback (escaped main)\n" + "".join(traceback.format_exception_only(type(e), e)))
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                os.chdir(home)
            text = err.getvalue()
            verdict = classify(case, rc, out.getvalue(), text, how)
            sink.write(json.dumps({"verdict": verdict, "rc": rc, "err": text[-600:], "seconds": time.perf_counter() - t0,
                                   "case": asdict(case) | {"index": index}}, default=_bytes_json) + "\n")
            sink.flush()


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
