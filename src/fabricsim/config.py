"""Validating configs into pydantic models, with one-line errors; reading them through `inputs`.

A validation error names the file, the field path, the value and what is accepted. Values read
from a file are validated as the command line validates its text: a bandwidth, time or compute
rate needs its unit (`units.numbers_need_units`). `load_yaml` reads a YAML config and validates
it in one step.

Reading files (`read_input_bytes`, `read_input_text`, `read_yaml_mapping`) and the strict YAML
loader (`StrictLoader`, `load_yaml_text`: plain data only, each key once, at most `MAX_DEPTH`
levels) are in `fabricsim.inputs`, re-exported here.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import ConfigError, UnsupportedGroupSize
from .inputs import _short, read_yaml_mapping
from .units import numbers_need_units

# re-exported: reading files and the strict YAML loader (`fabricsim.inputs`)
from .inputs import MAX_DEPTH, MAX_VALUES, StrictLoader, load_yaml_text, read_input_bytes, read_input_text  # noqa: F401

if TYPE_CHECKING:  # lazy: pydantic costs 0.1 s at start-up, and reading a file (`fabricsim astra`) needs none
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")


# ---- validation ------------------------------------------------------------------------------------

# pydantic's error types -> what is accepted, in this project's words
_ACCEPTED = {
    "int_type": "accepted: an integer", "int_parsing": "accepted: an integer", "int_from_float": "accepted: an integer",
    "float_type": "accepted: a number", "float_parsing": "accepted: a number", "finite_number": "accepted: a finite number",
    "bool_type": "accepted: true or false", "bool_parsing": "accepted: true or false",
    "string_type": "accepted: text", "list_type": "accepted: a list", "dict_type": "accepted: a mapping",
    "model_type": "accepted: a mapping", "model_attributes_type": "accepted: a mapping",
    "too_short": "accepted: a non-empty list",
}
_BOUNDS = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}


def validate(model: type[M], data: dict, where: str, brackets: bool = False, *, from_file: bool = False,
             context: dict | None = None) -> M:
    """`model.model_validate(data)`, with the first error as a one-line ConfigError.

    Parameters
    ----------
    model : pydantic model class
        The model to validate against.
    data : dict
        The parsed YAML mapping.
    where : str
        What the error names first (the file).
    brackets : bool
        Write list indices as `shapes[0].dims` instead of `shapes.0.dims`.
    from_file : bool
        `data` was read from a file: bandwidths, times and compute rates need their units, as on
        the command line (`units.numbers_need_units`); numbers from Python are SI values.
    context : dict, optional
        Pydantic validation context for the model's validators (`TrainConfig` reads `base_dir`);
        `from_file` adds `from_file: True`.

    Returns
    -------
    pydantic model
        An instance of `model`; ConfigError naming the field path, the value and what is accepted.
    """
    from pydantic import ValidationError  # already imported: `model` is a pydantic model

    if from_file:  # validators that treat file data differently read it from the context
        context = {**(context or {}), "from_file": True}
    try:
        with numbers_need_units() if from_file else contextlib.nullcontext():
            return model.model_validate(data, context=context)
    except ValidationError as e:
        errors = e.errors()
        err = errors[0]
        union = _union_members(errors)
        raw_loc = err["loc"][:-1] if union else err["loc"]
        loc = [str(x) for x in raw_loc]
        if brackets:  # fold list indices into the field before them
            folded: list[str] = []
            for x in raw_loc:
                if isinstance(x, int) and folded:
                    folded[-1] += f"[{x}]"
                else:
                    folded.append(str(x))
            loc = folded
        msg = err["msg"].removeprefix("Value error, ")
        cause = err.get("ctx", {}).get("error")
        value = err.get("input") if err["type"] != "missing" else None
        if isinstance(cause, ConfigError):  # raised by a section's domain object: keep its field and value
            msg, value = cause.accepted, cause.value
            if isinstance(cause, UnsupportedGroupSize):
                msg = f"{cause.algorithm} {cause.collective} cannot run on {cause.p} ranks; {cause.accepted}"
            loc = _join_fields(loc, str(cause.field).split(": ")[-1].split("."))
        elif union:
            msg = "accepted: " + " or ".join(dict.fromkeys(_ACCEPTED.get(x["type"], x["msg"]).removeprefix("accepted: ")
                                                           for x in union))
        elif err["type"] == "extra_forbidden":
            allowed = _fields_at(model, err["loc"][:-1])
            msg = "unknown field; accepted: " + ", ".join(allowed) if allowed else "unknown field"
        elif err["type"] == "literal_error":
            msg = "accepted: " + err.get("ctx", {}).get("expected", "")
        elif err["type"] == "missing":
            msg = "required field is missing"
        elif err["type"] in _ACCEPTED:
            msg = _ACCEPTED[err["type"]]
        elif err["type"] in _BOUNDS:
            bound = next(iter(err.get("ctx", {}).values()), "")
            kind = "an integer" if isinstance(value, int) else "a number"
            msg = f"accepted: {kind} {_BOUNDS[err['type']]} {bound}"
        if "a number" in msg or "an integer" in msg:
            msg += _read_as_text(value)
        raise ConfigError(f"{where}: {'.'.join(loc)}", _short(value), msg) from None


_EXPONENT_ONLY = re.compile(r"[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+")


def _read_as_text(value: Any) -> str:
    """What to add to "accepted: a number" when the value is a number that YAML read as text: YAML 1.1
    (PyYAML) reads `1e-300` (an exponent, no dot) as a string, and anything in quotes is one.

    Examples
    --------
    >>> _read_as_text("1e-300")
    " (YAML 1.1 reads '1e-300', an exponent without a dot, as text: write 1.0e-300)"
    >>> _read_as_text("0.5"), _read_as_text(0.5), _read_as_text("fast")
    (' (given as text, in quotes: write 0.5 without them)', '', '')
    """
    if not isinstance(value, str):
        return ""
    text = value.strip()
    if _EXPONENT_ONLY.fullmatch(text):
        mant, _, exp = text.replace("E", "e").partition("e")
        return f" (YAML 1.1 reads {text!r}, an exponent without a dot, as text: write {mant}.0e{exp})"
    try:
        float(text)
    except ValueError:
        return ""
    return f" (given as text, in quotes: write {text} without them)"


def _union_members(errors: list) -> list:
    """The errors of the first error's union members (`str | dict` fails as `topology.str` and
    `topology.dict[str,any]`), or [] when the first error is not one of a union's."""
    first = errors[0]["loc"]
    if not first:  # a model-level validator's error (loc ()): not a union member
        return []

    def tag(x) -> bool:  # pydantic names a union member by its type: str, int, dict[str,any], TorusParams
        return isinstance(x, str) and ("[" in x or x in ("str", "int", "float", "bool") or x[:1].isupper())

    same = [x for x in errors if len(x["loc"]) == len(first) and x["loc"][:-1] == first[:-1] and tag(x["loc"][-1])]
    return same if len(same) > 1 and tag(first[-1]) else []


def link_items(value: Any, field: str) -> list:
    """The items of a `bandwidth:` or `latency:`: one value, a comma list or a list (one per dimension).

    Parameters
    ----------
    value : str, float or list
        As written.
    field : str
        The field named in errors.

    Returns
    -------
    list
        The items, unparsed; ConfigError naming `field` when there are none.
    """
    if isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, str):
        items = [v for v in value.split(",") if v.strip()]
    else:
        items = [value]
    if not items:
        raise ConfigError(field, value, "accepted: one value or a comma list, one per dimension")
    return items


def check_link_values(value: Any, parse, field: str) -> Any:
    """Check a `bandwidth:` or `latency:` when the file is loaded (the topology, built later,
    decides how many values it takes): each item of `link_items` parsed by `parse`.

    Parameters
    ----------
    value : str, float or list
        As written.
    parse : callable
        `units.parse_bandwidth` or `units.parse_time` (`parse(item, field)`).
    field : str
        The field named in errors.

    Returns
    -------
    str, float or list
        `value` unchanged; ConfigError naming `field` for an empty list or an item that does not
        parse (a bare number read from a file: a unit is needed, as on the command line).
    """
    for item in link_items(value, field):
        parse(item, field)
    return value


def check_topology_value(value: Any) -> Any:
    """A config's `topology:` before the topology is built: a spec string or a mapping.

    Parameters
    ----------
    value : object
        As written.

    Returns
    -------
    str or dict
        `value`; ConfigError naming `topology` for anything else.
    """
    if not isinstance(value, (str, dict)):
        raise ConfigError("topology", value, "accepted: a spec string such as torus:8x8, or a mapping such as "
                                             "{family: torus, dims: [8, 8]}")
    return value


@contextlib.contextmanager
def errors_in(where: str | None, section: str):
    """Name the file and the section in ConfigErrors raised inside the block (a domain object
    built from a validated section: `network.latency` when a topology has fewer dimensions).

    Parameters
    ----------
    where : str or None
        The file (None: errors pass unchanged, as for configs made in Python).
    section : str
        The config path the block builds (`network`, `workload`, `collectives[2]`).

    Yields
    ------
    None
        ConfigErrors leave as `<where>: <section>.<field>: invalid value ...`.
    """
    try:
        yield
    except UnsupportedGroupSize as e:
        if where is None:
            raise
        raise ConfigError(f"{where}: {section}", e.p, f"{e.algorithm} {e.collective} cannot run on {e.p} ranks; "
                                                      f"{e.accepted}") from None
    except ConfigError as e:
        if where is None or str(e.field).startswith(where):
            raise
        inner = [x for x in str(e.field).replace(": ", ".").split(".") if x]
        outer = [x for x in section.split(".") if x]
        raise ConfigError(f"{where}: {'.'.join(_join_fields(outer, inner) if outer else inner)}", _short(e.value),
                          e.accepted) from None


def _join_fields(loc: list[str], inner: list[str]) -> list[str]:
    """A config path and a domain object's field name, overlap removed: (system, npu) +
    (npu, efficiency) -> system.npu.efficiency; (system, endpoint) + (endpoint, rate) ->
    system.endpoint.rate; a field already in the path is not repeated; a policy's `endpoint.`
    prefix goes where the section has another name (policies.ACE.sram)."""
    for k in range(min(len(loc), len(inner)), 0, -1):
        if loc[-k:] == inner[:k]:
            return loc + inner[k:]
    if inner and inner[-1] in loc:
        return loc
    return loc + [x for x in inner if x and x not in ("option", "endpoint")]


def _fields_at(model: type[BaseModel], loc) -> list[str]:
    """Names of the fields of the (nested) model at `loc`, for 'unknown field' errors."""
    from pydantic import BaseModel

    cur = model
    for part in loc:
        f = cur.model_fields.get(part) if isinstance(part, str) else None
        ann = getattr(f, "annotation", None) if f is not None else None
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            cur = ann
        else:
            return []
    return list(cur.model_fields)


def load_yaml(model: type[M], path: str | Path, what: str) -> M:
    """Read the YAML file `path` and validate it as `model` (numbers in unit fields need units).

    Parameters
    ----------
    model : pydantic model class
        The model to validate against.
    path : str or Path
        The YAML file.
    what : str
        The top-level keys expected, named in the error for a non-mapping file.

    Returns
    -------
    pydantic model
        An instance of `model`; a one-line ConfigError (file, field path, value, what is
        accepted) otherwise.
    """
    return validate(model, read_yaml_mapping(path, what), str(path), from_file=True)

