"""The algorithm registry: one line per algorithm.

Each algorithm file defines its `Algorithm` descriptor (the builder, the collectives and group
sizes it serves, its typed options, what it needs from a topology); registering it here is one
line. `choose_algorithm` is the one parser of what users write (`ring,bidirectional=no`,
`swing` with options from a YAML mapping, an alias such as `bidirectional_ring`): the command
line, training configs, traffic files and experiment configs all go through it.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import ConfigError
from . import (
    bucket,
    circulant_rings,
    direct,
    double_binary_tree,
    halving_doubling,
    hamiltonian_rings,
    hierarchical,
    in_network,
    in_network_tree,
    nvls,
    nvls_tree,
    nccl_ring,
    nccl_tree,
    recursive_doubling,
    ring,
    swing,
)
from .algorithm import Algorithm, AlgorithmChoice, Option

ALGORITHMS: dict[str, Algorithm] = {}
_ALIASES: dict[str, tuple[str, Mapping[str, Any]]] = {}


def _key(name: str) -> str:
    return str(name).strip().lower().replace("-", "_")


def register(alg: Algorithm) -> Algorithm:
    """Add `alg` (and its aliases) to the registry.

    Parameters
    ----------
    alg : Algorithm
        The descriptor; a registered name is replaced.

    Returns
    -------
    Algorithm
        `alg`.
    """
    ALGORITHMS[alg.name] = alg
    for alias, preset in alg.aliases.items():
        _ALIASES[_key(alias)] = (alg.name, dict(preset))
    return alg


register(ring.ALGORITHM)
register(direct.ALGORITHM)
register(recursive_doubling.ALGORITHM)
register(halving_doubling.ALGORITHM)
register(double_binary_tree.ALGORITHM)
register(hierarchical.ALGORITHM)
register(in_network.ALGORITHM)
register(in_network_tree.ALGORITHM)
register(nvls.ALGORITHM)
register(nvls_tree.ALGORITHM)
register(swing.ALGORITHM)
register(swing.TORUS_RECURSIVE_DOUBLING)
register(bucket.ALGORITHM)
register(hamiltonian_rings.ALGORITHM)
register(circulant_rings.ALGORITHM)
register(nccl_ring.ALGORITHM)
register(nccl_tree.ALGORITHM)


def resolve_algorithm(name: str) -> tuple[Algorithm, dict[str, Any]]:
    """The algorithm a name or alias stands for, and the options the alias presets.

    Parameters
    ----------
    name : str
        A registry name or alias, any case, `-` or `_`.

    Returns
    -------
    (Algorithm, dict)
        ConfigError listing the accepted names when there is none.
    """
    key = _key(name)
    if key in ALGORITHMS:
        return ALGORITHMS[key], {}
    if key in _ALIASES:
        target, preset = _ALIASES[key]
        return ALGORITHMS[target], dict(preset)
    raise ConfigError("algorithm", name, f"accepted: {', '.join(sorted(ALGORITHMS))} "
                                         f"(aliases: {', '.join(sorted(_ALIASES))})")


def get_algorithm(name: str) -> Algorithm:
    """The registered algorithm of a name or alias.

    Parameters
    ----------
    name : str
        A registry name or alias, any case, `-` or `_`.

    Returns
    -------
    Algorithm
        ConfigError listing the accepted names when there is none.
    """
    return resolve_algorithm(name)[0]


def check_option_keys(spec: object, options: Mapping[str, object] | None, where: str) -> None:
    """None, or a ConfigError naming `where` when an algorithm option is given twice: in the
    `NAME,KEY=VALUE,...` string (`ring,bidirectional=true,bidirectional=false`), or in it and in
    `options` too (`-a ring,chunks=2 -o chunks=4`), where one would win in silence; topology
    options given twice are refused alike.

    Parameters
    ----------
    spec : str or object
        The algorithm as given (anything but a string has no options of its own here).
    options : mapping, optional
        Options given apart (`--option KEY=VALUE`).
    where : str
        The field named in errors.

    Examples
    --------
    >>> check_option_keys("ring,chunks=2", {"bidirectional": "true"}, "--algorithm")  # fine
    >>> check_option_keys("ring,chunks=2", {"chunks": "4"}, "--algorithm")
    Traceback (most recent call last):
    ...
    fabricsim.errors.ConfigError: --algorithm: invalid value 'chunks=4'; option 'chunks' is given twice (first 'chunks=2'); accepted: each option once
    """
    seen: dict[str, str] = {}
    parts = str(spec).split(",")[1:] if isinstance(spec, str) else []
    given = [p.strip() for p in parts] + [f"{k}={v}" for k, v in (options or {}).items()]
    for item in given:
        key = item.partition("=")[0].strip().lower().replace("-", "_")
        if key in seen:
            raise ConfigError(where, item, f"option {key!r} is given twice (first {seen[key]!r}); "
                                           "accepted: each option once")
        seen[key] = item


def choose_algorithm(spec: str | AlgorithmChoice, options: Mapping[str, Any] | None = None,
                     where: str = "algorithm") -> AlgorithmChoice:
    """Parse what a user chose: `name[,key=value...]` plus `options` (a mapping, e.g. from YAML).

    Parameters
    ----------
    spec : str or AlgorithmChoice
        `ring`, `ring,bidirectional=no`, `hierarchical,inner=ring/direct,order=baseline`, an alias.
    options : mapping, optional
        More options (they override the string's; `check_option_keys` refuses the overlap where a
        command takes both); values may be strings, numbers, booleans or lists.
    where : str
        The field named in errors (`network.algorithms.all-reduce`, `--option`).

    Returns
    -------
    AlgorithmChoice
        The canonical name with typed options in name order; a bad name, option or value is a
        one-line ConfigError naming `where`.
    """
    if isinstance(spec, AlgorithmChoice):
        name, raw = spec.name, spec.kwargs
        if name == AUTO:
            return spec
    else:
        check_option_keys(spec, None, where)  # given twice in the string; against `options`: the caller's field
        name, *parts = [x.strip() for x in str(spec).split(",")]
        raw = {}
        for part in parts:
            k, eq, v = part.partition("=")
            if not eq or not k.strip():
                raise ConfigError(where, spec, "accepted: NAME or NAME,KEY=VALUE,... (e.g. ring,bidirectional=true)")
            raw[k.strip()] = v.strip()
    if _key(name) == AUTO:
        return _auto_choice({**raw, **dict(options or {})}, where)
    alg, preset = resolve_algorithm(name)
    typed = {**preset, **alg.parse_options(raw, where), **alg.parse_options(options or {}, where)}
    return AlgorithmChoice(alg.name, tuple(sorted(typed.items())))


def _auto_choice(given: Mapping[str, Any], where: str) -> AlgorithmChoice:
    """`auto` with options: each must be an option of one of the algorithms auto may run
    (`AUTO_MAY_RUN`); it is passed to those that take it, typed there (`network.tuner`)."""
    opts = []
    for key, value in given.items():
        k = str(key).strip().lower().replace("-", "_")
        takers = [n for n in AUTO_MAY_RUN if ALGORITHMS[n].option(k) is not None]
        if not takers:
            raise ConfigError(f"{where} {key}" if where.startswith("--") else f"{where}.{key}", value,
                              f"auto may run {', '.join(AUTO_MAY_RUN)}, and none takes {key}; accepted: their options, "
                              "or name an algorithm to force one (e.g. -a nccl_ring -o proto=LL128)")
        for n in takers:
            ALGORITHMS[n].parse_options({k: value}, where)  # a bad value is refused now, where it was written
        opts.append((k, value if isinstance(value, (bool, int)) else str(value)))
    return AlgorithmChoice(AUTO, tuple(sorted(opts)))


AUTO_MAY_RUN = ("ring", "direct", "nccl_ring", "nccl_tree", "nvls", "nvls_tree")
"""The algorithms `auto` chooses among (`network.tuner`)."""

AUTO = "auto"
"""The algorithm name that asks for NCCL's choice per size (`network.tuner`): `choose_algorithm`
returns it as `AlgorithmChoice("auto")`, which only the pricing path (`network.tuner.price_collective`)
resolves; it builds no schedule itself."""


def algorithms_for(collective: str) -> list[str]:
    """Names of the registered algorithms that serve `collective`.

    Parameters
    ----------
    collective : str
        Canonical collective name.

    Returns
    -------
    list of str
        Sorted.
    """
    return sorted(n for n, a in ALGORITHMS.items() if collective in a.collectives)


__all__ = ["ALGORITHMS", "AUTO", "Algorithm", "AlgorithmChoice", "Option", "algorithms_for", "choose_algorithm",
           "get_algorithm", "register", "resolve_algorithm"]
