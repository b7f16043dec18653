"""Loading YAML config files into pydantic models, with one-line errors.

Every config file fabricsim reads goes through `load_yaml`: a syntax error names the file and
line; a validation error names the file, the field path, the value and what is accepted.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from .errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def read_yaml_mapping(path: str | Path, what: str) -> dict:
    """The YAML mapping in a file.

    Parameters
    ----------
    path : str or Path
        The YAML file.
    what : str
        The top-level keys expected, named in the error for a non-mapping file.

    Returns
    -------
    dict
        The parsed mapping; ConfigError for a missing file, bad syntax (with its line) or a
        non-mapping.
    """
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ConfigError(str(path), "unreadable", f"expected a readable YAML file ({e.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{where}", "YAML", "a syntax error; accepted: a YAML mapping") from None
    if not isinstance(data, dict):
        raise ConfigError(str(path), type(data).__name__, f"accepted: a YAML mapping with {what}")
    return data


def validate(model: type[M], data: dict, where: str, brackets: bool = False) -> M:
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

    Returns
    -------
    pydantic model
        An instance of `model`; ConfigError naming the field path, the value and what is accepted.
    """
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = [str(x) for x in err["loc"]]
        if brackets:  # fold list indices into the field before them
            folded: list[str] = []
            for x in err["loc"]:
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
            loc = _join_fields(loc, str(cause.field).split(": ")[-1].split("."))
        elif err["type"] == "extra_forbidden":
            allowed = _fields_at(model, err["loc"][:-1])
            msg = "unknown field; accepted: " + ", ".join(allowed) if allowed else "unknown field"
        elif err["type"] == "literal_error":
            msg = "accepted: " + err.get("ctx", {}).get("expected", "")
        elif err["type"] == "missing":
            msg = "required field is missing"
        raise ConfigError(f"{where}: {'.'.join(loc)}", value, msg) from None


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
    """Read the YAML file `path` and validate it as `model`.

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
    return validate(model, read_yaml_mapping(path, what), str(path))
