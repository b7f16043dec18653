"""The `fabricsim collective` job as a library call: a collective priced over sizes, verified on data.

`run_collective` is everything `fabricsim collective` does but print: the CLI, the demo, sweep
points and the NCCL validation all call it, so one collective and size get one number through
every entry point. It sits above the layers it uses (topology, collectives, network, report), as
`fabricsim.train` does for a training job.
"""

from __future__ import annotations

from .errors import ConfigError
from .progress import Progress, report
from .units import parse_size_range


def parse_options(items: list[str]) -> dict[str, str]:
    """`--option KEY=VALUE` items as a mapping of strings; the algorithm types them
    (`collectives.registry.choose_algorithm`). A KEY given twice is refused (as a topology option is):
    the last would win in silence."""
    opts: dict = {}
    first: dict = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--option", item, "accepted: KEY=VALUE, e.g. bidirectional=true or chunks=8")
        key = key.strip()
        if key in opts:
            raise ConfigError("--option", item, f"option {key!r} is given twice (first {first[key]!r}); "
                                                "accepted: each option once")
        opts[key], first[key] = value.strip(), item
    return opts


def _jsonable_option(v):
    return list(v) if isinstance(v, tuple) else v


VERIFY_MODES = ("auto", "full", "sample", "off")
def verify_mode(check, no_verify: bool = False, field: str = "--verification") -> str:
    """The verification `fabricsim collective` runs: auto, full, sample or off.

    Parameters
    ----------
    check : bool or str
        True (= auto) or False (= off), as `run_collective` took it before modes, or a mode name.
    no_verify : bool
        `--no-verify` was given: off, unless a mode other than auto or off was asked for too.
    field : str
        The option named in errors.

    Returns
    -------
    str
        One of `VERIFY_MODES`; a one-line ConfigError naming `field` for anything else.
    """
    if isinstance(check, bool):
        mode = "auto" if check else "off"
    else:
        mode = str(check).strip().lower()
        if mode not in VERIFY_MODES:
            raise ConfigError(field, check, f"accepted: {', '.join(VERIFY_MODES)}")
    if no_verify:
        if mode not in ("auto", "off"):
            raise ConfigError(field, check, "accepted with --no-verify: off (or leave --verification out)")
        return "off"
    return mode


def run_collective(topology: str, bandwidth: str, latency: str, collective: str, algorithm: str,
                   sizes: str, model: str, group: str | None = None, root: int | None = None,
                   options: list[str] | None = None, check: bool | str = True, progress: Progress | None = None):
    """Everything `fabricsim collective` does, minus printing: (header, rows); `progress(done, total,
    phase)` is told each phase (building the schedule, verifying it, timing the sizes). `root`
    None is rank 0 of the group (broadcast and reduce). `check`: a verification mode (`verify_mode`:
    auto, full, sample, off; True = auto, False = off); header["verified"] says what ran. On a
    flow model each row names the flow plan its schedule was lowered with (`flow_plan`:
    `network.lowering.plans`); NCCL's choices add `algorithm`, `protocol` and `channels`."""
    from .collectives.api import normalize_collective, parse_group
    from .collectives.registry import choose_algorithm
    from .collectives.verify import default_sample, sample_size, verify
    from .network.model import get_network_model
    from .network.tuner import price_collective
    from .report.tables import collective_rows
    from .topology.spec import parse_topology

    mode = verify_mode(check)
    net = get_network_model(model)
    size_list = parse_size_range(sizes, "sizes")
    coll = normalize_collective(collective)
    ranks = parse_group(group)  # before the topology: a hostile range is refused without building it
    from .collectives.registry import check_option_keys

    check_option_keys(algorithm, parse_options(options or []), "--algorithm")
    choice = choose_algorithm(algorithm, parse_options(options or []), where="--option")
    topo = parse_topology(topology, bandwidth, latency)
    if ranks is not None and len(ranks) > topo.n_npus:
        raise ConfigError("group", group, f"names {len(ranks)} ranks; accepted: at most {topo.n_npus} on {topo.name}")
    report(progress, 0, 0, f"building the {choice.name} schedule on {topo.name}")
    priced = price_collective(topo, coll, choice, net, group=ranks, root=0 if root is None else root,
                              where="--option")
    times = priced.times(size_list)  # linear passes over prepared schedules: the choice before the checks
    chosen = priced.chosen(size_list)
    used = list({id(c.schedule): c.schedule for c in chosen}.values())  # the schedules that run a size
    verified = None
    if mode != "off":
        reps = []
        for sched in used:
            # auto: every block unless it moves more than 5M blocks; a sample solves all steps at once
            sample = {"auto": default_sample, "full": lambda s: None, "sample": sample_size}[mode](sched)
            report(progress, 0, 0, f"verifying {sched.algorithm} on data "
                                   f"({f'{sample} sampled blocks' if sample else 'every block'})")
            reps.append(verify(sched, sample=sample))
        verified = {"blocks_checked": sum(r.blocks_checked for r in reps), "nblocks": sum(r.nblocks for r in reps),
                    "sampled": any(r.blocks_checked < r.nblocks for r in reps), "mode": mode}
    report(progress, 0, len(size_list), f"timing {len(size_list)} sizes ({net.name})")
    sched = used[-1]
    rows = collective_rows(coll, sched.p, size_list, times)
    from .engine.plausible import check_collective

    check_collective(rows, f"--bandwidth {bandwidth}, --latency {latency} on {topo.name}")
    # auto with one plain candidate (no GPU cluster: ring) reads as that algorithm, as before
    nccl = len(priced.candidates) > 1 or any(c.protocol != "-" for c in priced.candidates)
    if nccl:  # what NCCL_DEBUG=INFO reports per call: algorithm, protocol, channels
        for row, c in zip(rows, chosen):
            row.update({"algorithm": c.algorithm, "protocol": c.protocol, "channels": c.channels})
    for row, c in zip(rows, chosen):  # on a flow model: how the chosen schedule was lowered to flows
        if c.flow_plan is not None:
            row["flow_plan"] = c.flow_plan
    header = {
        "topology": topo.name, "npus": topo.n_npus, "bandwidth": bandwidth, "latency": latency,
        "collective": coll, "algorithm": str(choice) if nccl else sched.algorithm, "ranks": sched.p,
        "model": net.name, "steps": sched.n_steps, "streaming": sched.streaming,
        "options": {k: _jsonable_option(v) for k, v in (choice if nccl else chosen[-1].choice).options},
        "verified": verified,
    }
    return header, rows
