"""ASTRA-sim config readers, shared parts: the vocabulary of its files, one-line errors that name
the file and the key, strict JSON/YAML loading, value checks.

Files are read as every input file is (`fabricsim.config.read_input_text`: a regular file within
the `file_bytes` limit, UTF-8); YAML as every config is (`config.load_yaml_text`: plain data,
each key once, bounded nesting); JSON with each key once, standard numbers only, integers within
64 bits and at most `config.MAX_DEPTH` levels of nesting."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from ..config import MAX_DEPTH, load_yaml_text, read_input_text
from ..errors import ConfigError

#: network building blocks and the fabricsim `stack` kind each becomes
BLOCKS: dict[str, str] = {"Ring": "ring", "FullyConnected": "fc", "Switch": "switch"}
#: collectives with a `*-implementation` key, in ASTRA-sim's spelling
COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all")
SCHEDULING_POLICIES = ("LIFO", "FIFO", "EXPLICIT")
COLLECTIVE_OPTIMIZATIONS = ("baseline", "localBWAware")
MEMORY_TYPES = ("NO_MEMORY_EXPANSION", "PER_NPU_MEMORY_EXPANSION", "PER_NODE_MEMORY_EXPANSION", "MEMORY_POOL")
#: keys present in shipped examples / docs that ASTRA-sim (HEAD) does not read
IGNORED_KEYS = ("boost-mode", "intra-dimension-scheduling", "inter-dimension-scheduling")

GIB = 2**30  # ASTRA-sim's network "GB" (bytes)
_MAX_VALUE_REPR = 80


# ----------------------------------------------------------------------------------------- errors


def _one_line(text: str) -> str:
    return re.sub(r"\s*[\r\n]+\s*", " ", text).strip()


def _short_repr(value: object) -> str:
    r = repr(value)
    return r if len(r) <= _MAX_VALUE_REPR else r[: _MAX_VALUE_REPR - 3] + "..."


class AstraConfigError(ConfigError):
    """A bad ASTRA-sim input file. One line: `<file>: <key>: <problem>; <what is accepted>`.

    `path` and `key` are kept as attributes; `field` is `"<file>: <key>"` as in `ConfigError`.

    Parameters
    ----------
    path : str or Path
        The file.
    key : str or None
        The key (None: the file as a whole).
    value : object
        The offending value (shown, shortened, unless `problem` is given).
    accepted : str
        What is accepted, e.g. "accepted: a number > 0 (GB/s)".
    problem : str, optional
        What is wrong, instead of "invalid value <value>" (e.g. "missing").
    """

    def __init__(self, path: str | Path, key: str | None, value: object, accepted: str, *,
                 problem: str | None = None):
        self.path = str(path)
        self.key = key
        self.field = f"{self.path}: {key}" if key else self.path
        self.value = value
        self.accepted = accepted
        what = problem if problem is not None else f"invalid value {_short_repr(value)}"
        ValueError.__init__(self, _one_line(f"{self.field}: {what}; {accepted}"))


def _missing(path, key: str, accepted: str) -> AstraConfigError:
    return AstraConfigError(path, key, None, accepted, problem="missing")


# ----------------------------------------------------------------------------------- file loading


def _read_text(path) -> str:
    return read_input_text(path, what="an ASTRA-sim input file")


def _no_duplicates(path):
    def hook(pairs):
        seen: dict[str, Any] = {}
        for k, v in pairs:
            if k in seen:
                raise AstraConfigError(path, k, v, "accepted: each key once (JSON keeps only the last)",
                                       problem="key given twice")
            seen[k] = v
        return seen
    return hook


def _reject_constant(path):
    def hook(name):
        raise AstraConfigError(path, None, name, "accepted: standard JSON (no NaN or Infinity)",
                               problem=f"non-standard number {name}")
    return hook


def _int_within_64_bits(path):
    def hook(text: str) -> int:
        # checked before int(): Python refuses 4,300+ digits with a ValueError, not a JSON error
        value = int(text) if len(text) <= 25 else None
        if value is None or not -(2**63) <= value < 2**63:
            raise AstraConfigError(path, None, _short_repr(text), "accepted: integers from -2^63 to 2^63-1",
                                   problem=f"integer beyond 64 bits {_short_repr(text)}")
        return value
    return hook


def _depth(data) -> int:
    """Nesting depth of parsed JSON (iterative: the data may be deep)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, (dict, list)):
            deepest = max(deepest, d)
            if d <= MAX_DEPTH:
                stack.extend((v, d + 1) for v in (x.values() if isinstance(x, dict) else x))
    return deepest


def _load_json(path) -> Any:
    text = _read_text(path)
    too_deep = AstraConfigError(path, None, None, f"accepted: at most {MAX_DEPTH} levels of arrays and objects",
                                problem="nested too deep")
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates(path), parse_constant=_reject_constant(path),
                          parse_int=_int_within_64_bits(path))
    except json.JSONDecodeError as e:
        raise AstraConfigError(f"{path}:{e.lineno}", None, None, "accepted: valid JSON",
                               problem=f"JSON syntax error at line {e.lineno} column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise too_deep from None
    if _depth(data) > MAX_DEPTH:
        raise too_deep
    return data


def _load_yaml(path) -> Any:
    return load_yaml_text(_read_text(path), str(path))


def _mapping(path, data, what: str) -> dict:
    if not isinstance(data, dict):
        raise AstraConfigError(path, "top level", data if not isinstance(data, (list, dict)) else type(data).__name__,
                               f"accepted: {what}", problem=f"expected {what}, got {type(data).__name__}")
    return data


# ------------------------------------------------------------------------------- value checking

_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


ASTRA_MAX = 1e15
"""The largest number an ASTRA-sim file may give in its unit (ns, GB/s, bytes, TFLOPS): beyond it,
times and sizes leave the 64-bit nanosecond clock ASTRA-sim's answers are given on."""


def _number(path, key: str, v, *, minimum: float | None = 0.0, strict: bool = False,
            allow_text: bool = False, unit: str = "") -> float:
    """A finite real number (not a bool) >= minimum (> minimum if `strict`) and <= ASTRA_MAX."""
    bound = "" if minimum is None else (f" > {minimum:g}" if strict else f" >= {minimum:g}")
    bound += f" and <= {ASTRA_MAX:g}"
    accepted = f"accepted: a number{bound}{(' (' + unit + ')') if unit else ''}"
    x = v
    if allow_text and isinstance(v, str) and _NUMBER_TEXT.fullmatch(v.strip()):
        x = float(v)  # YAML 1.1 (PyYAML) reads `1e3` as text; yaml-cpp reads it as a number
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise AstraConfigError(path, key, v, accepted)
    if minimum is not None and (x <= minimum if strict else x < minimum) or abs(x) > ASTRA_MAX:
        raise AstraConfigError(path, key, v, accepted)
    return float(x)


def _integer(path, key: str, v, *, minimum: int | None = 0, why: str = "") -> int:
    """An integer (an integral float such as 4.0 is accepted, as nlohmann/yaml-cpp convert it; 4.5 is
    not, because ASTRA-sim would silently truncate it); at most ASTRA_MAX in magnitude."""
    accepted = (f"accepted: an integer{'' if minimum is None else f' >= {minimum}'} and <= {ASTRA_MAX:g}"
                f"{(' ' + why) if why else ''}")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise AstraConfigError(path, key, v, accepted)
    if isinstance(v, float) and not (math.isfinite(v) and v.is_integer()):
        raise AstraConfigError(path, key, v, accepted)
    n = int(v)
    if minimum is not None and n < minimum or abs(n) > ASTRA_MAX:
        raise AstraConfigError(path, key, v, accepted)
    return n


def _flag(path, key: str, v) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    raise AstraConfigError(path, key, v, "accepted: 0 or 1 (or false/true)")


def _string(path, key: str, v, accepted: str = "accepted: a non-empty string") -> str:
    if not isinstance(v, str) or not v:
        raise AstraConfigError(path, key, v, accepted)
    return v


def _choice(path, key: str, v, choices) -> str:
    accepted = "accepted: " + " / ".join(choices) + " (case-sensitive)"
    if not isinstance(v, str) or v not in choices:
        raise AstraConfigError(path, key, v, accepted)
    return v
