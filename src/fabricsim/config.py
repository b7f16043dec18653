"""Reading input files and validating them into pydantic models, with one-line errors.

Every text file a user points fabricsim at goes through `read_input_text`: only a regular file
within the `file_bytes` limit, in UTF-8. Every YAML config goes through `read_yaml_mapping`
(`load_yaml` adds the validation): plain data only (mappings, lists, text, numbers within 64
bits, true/false, null), each key once, at most `MAX_DEPTH` levels deep. A syntax or loading
error names the file and line; a validation error names the file, the field path, the value and
what is accepted. Values read from a file are validated as the command line validates its text:
a bandwidth, time or compute rate needs its unit (`units.numbers_need_units`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

from .errors import ConfigError, UnsupportedGroupSize
from .limits import check_limit, current_limits
from .units import format_size, numbers_need_units

if TYPE_CHECKING:  # lazy: pydantic costs 0.1 s at start-up, and reading a file (`fabricsim astra`) needs none
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")

MAX_DEPTH = 100
"""Deepest nesting of lists and mappings a YAML file may have (configs need fewer than 10)."""

MAX_VALUES = 1_000_000
"""Most values a YAML document may hold once its aliases are expanded (a billion-laughs file is tiny)."""

_INT_BITS = 63  # integers must fit a signed 64-bit integer: numpy arrays and counts hold them
_PLAIN = "accepted: plain data (mappings, lists, text, numbers, true/false, null)"
_MAX_REPR = 120


# ---- reading files ---------------------------------------------------------------------------------


def read_input_bytes(path: str | Path, field: str | None = None, what: str = "a file") -> bytes:
    """The bytes of a file a user named, checked before it is read.

    Parameters
    ----------
    path : str or Path
        The file.
    field : str, optional
        What errors name first (default: the path itself; e.g. `workload.astra_text`).
    what : str
        The kind of file expected, for the error (`a YAML file`, `a Chakra .et file`).

    Returns
    -------
    bytes
        The file's content. ConfigError (one line naming the file) for a missing or unreadable
        path, a folder, device or pipe (`/dev/zero`), or a file larger than the `file_bytes` limit
        (checked before reading).
    """
    name = _name(path, field)
    try:
        # opened before it is examined (no swap between the check and the read); O_NONBLOCK: a FIFO
        # does not wait for a writer, it is refused below like any file that is not regular
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ConfigError(name, "missing", f"no such file; accepted: {what} that exists") from None
    except (OSError, ValueError) as e:
        raise ConfigError(name, "unreadable", f"{getattr(e, 'strerror', None) or e}; accepted: {what} that can be "
                                              "read") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > current_limits().file_bytes:
        os.close(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise ConfigError(name, kind, f"accepted: {what} (a regular file, not a folder, device or pipe)")
        check_limit("file_bytes", st.st_size, "bytes", name, format_size(st.st_size))
    limit = current_limits().file_bytes
    with os.fdopen(fd, "rb") as fh:
        try:
            data = fh.read(st.st_size + 1)  # not read(limit + 1): that allocates the whole limit
            if len(data) > st.st_size:  # it grew since fstat: read on, within the limit
                data += fh.read(limit + 1 - len(data))
        except OSError as e:
            raise ConfigError(name, "unreadable", f"{e.strerror or e}; accepted: {what} that can be read") from None
    check_limit("file_bytes", len(data), "bytes", name, f"more than {limit:,} bytes")
    return data


def read_input_text(path: str | Path, field: str | None = None, what: str = "a text file") -> str:
    """The text of a file a user named (`read_input_bytes`), in UTF-8.

    Parameters
    ----------
    path : str or Path
        The file.
    field : str, optional
        What errors name first (default: the path itself; e.g. `workload.astra_text`).
    what : str
        The kind of file expected, for the error (`a YAML file`).

    Returns
    -------
    str
        The file's text, newlines as `\\n` (universal newlines). ConfigError (one line naming the
        file) for what `read_input_bytes` refuses, or text that is not UTF-8.
    """
    data = read_input_bytes(path, field, what)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise ConfigError(f"{_name(path, field)}:{line}", f"byte 0x{data[e.start]:02x}",
                          f"not UTF-8 text; accepted: {what} in UTF-8") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _name(path, field: str | None) -> str:
    return str(path) if field is None else f"{field}: {path}"


# ---- the YAML loader -------------------------------------------------------------------------------


class _LoadError(yaml.YAMLError):
    """A loading problem at a place in the file (its line and key path): `value` and `accepted`
    as in ConfigError."""

    def __init__(self, mark, path: str, value: object, accepted: str):
        super().__init__(accepted)
        self.problem_mark, self.path, self.value, self.accepted = mark, path, value, accepted


class StrictLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader limited to plain data: each key of a mapping once; no !!set, !!omap,
    !!pairs, !!binary or dates (!!timestamp: a value such as 2024-01-01); integers within 64 bits;
    at most `MAX_DEPTH` levels of nesting and `MAX_VALUES` values after aliases are expanded.

    Parameters
    ----------
    stream : str
        The YAML text.
    """

    def __init__(self, stream):
        super().__init__(stream)
        self._paths = [""]  # key path of the node being composed (`workload.parallelism`, `flows[2]`)
        self._path_of: dict[int, str] = {}  # id(node) -> its key path, for errors found when constructing

    def compose_node(self, parent, index):
        """The node at the current event, refused beyond `MAX_DEPTH` levels (before recursing)."""
        up = self._paths[-1]
        if isinstance(parent, yaml.SequenceNode):
            path = f"{up}[{index}]"
        elif isinstance(index, yaml.ScalarNode):  # a mapping's value, under its key
            path = f"{up}.{index.value}" if up else str(index.value)
        else:  # the document, or a mapping's key
            path = up
        if len(self._paths) > MAX_DEPTH:
            raise _LoadError(self.peek_event().start_mark, path, f"more than {MAX_DEPTH} levels",
                             f"nested too deep; accepted: at most {MAX_DEPTH} levels of lists and mappings")
        self._paths.append(path)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._paths.pop()
        self._path_of.setdefault(id(node), path)
        return node

    def _error(self, node, value: object, accepted: str, key_node=None) -> _LoadError:
        """A _LoadError at `node` (at `key_node`, a key of the mapping `node`, if given)."""
        path = self._path_of.get(id(node), "")
        if key_node is not None:
            path = f"{path}.{key_node.value}" if path else str(key_node.value)
        return _LoadError((key_node or node).start_mark, path, value, accepted)

    def get_single_node(self):
        """The document's node, refused when its aliases expand it beyond bounds or into a cycle."""
        node = super().get_single_node()
        if node is not None:
            _check_expansion(node, self._path_of)
        return node

    def construct_mapping(self, node, deep=False):
        """A mapping, refused when a key appears twice (YAML would keep the last silently)."""
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # `<<: *base` merges; explicit keys then override, as YAML says
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    raise self._error(node, _short(key),
                                      "a list or mapping as a key; accepted: text or numbers as keys") from None
                if key in seen:
                    raise self._error(node, key, f"key given twice (first at line {seen[key]}); accepted: each key "
                                                 "once", key_node)
                seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node):
        """An integer, refused beyond 64 bits (before converting very long digit strings)."""
        text = str(node.value)
        if len(text.replace("_", "")) > 40:  # no 64-bit integer is written this long
            raise self._error(node, _short(text), _INT_ACCEPTED)
        value = super().construct_yaml_int(node)
        if not -(2**_INT_BITS) <= value < 2**_INT_BITS:
            raise self._error(node, value, _INT_ACCEPTED)
        return value


_INT_ACCEPTED = "an integer beyond 64 bits; accepted: integers from -2^63 to 2^63-1"


def _not_plain(loader: StrictLoader, node) -> Any:
    """Refuse a tagged value that is not plain data (a set, a date, a Python object, `!custom`)."""
    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
    shown = f"{tag} {node.value}" if isinstance(node, yaml.ScalarNode) else tag
    why = "a date or time (write it in quotes to make it text); " if tag == "!!timestamp" else "not plain data; "
    raise loader._error(node, _short(shown), why + _PLAIN)


for _tag in ("set", "omap", "pairs", "binary", "timestamp"):
    StrictLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _not_plain)
StrictLoader.add_constructor(None, _not_plain)  # any other tag: !!python/..., !custom
StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_yaml_int)


def _check_expansion(root, path_of: dict[int, str]) -> None:
    """Refuse a node graph whose aliases make it cyclic, deeper than `MAX_DEPTH` or larger than
    `MAX_VALUES` once expanded; iterative, so a long chain of aliases cannot exhaust the stack."""
    memo: dict[int, tuple[int, int]] = {}  # id(node) -> (values, depth) once expanded
    on_path: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        kids = [x for pair in node.value for x in pair] if isinstance(node, yaml.MappingNode) else \
            list(node.value) if isinstance(node, yaml.SequenceNode) else []
        if done:
            size = 1 + sum(memo[id(k)][0] for k in kids)
            depth = 1 + max((memo[id(k)][1] for k in kids), default=0)
            if size > MAX_VALUES or depth > MAX_DEPTH:
                what = f"{size:,} values" if size > MAX_VALUES else f"{depth} levels"
                raise _LoadError(node.start_mark, path_of.get(id(node), ""), f"{what} once aliases are expanded",
                                 f"accepted: at most {MAX_VALUES:,} values and {MAX_DEPTH} levels")
            memo[id(node)] = (size, depth)
            on_path.discard(id(node))
            continue
        if id(node) in memo:
            continue
        on_path.add(id(node))
        stack.append((node, True))
        for k in kids:
            if id(k) in on_path:
                raise _LoadError(k.start_mark, path_of.get(id(node), ""), "a recursive alias",
                                 "accepted: aliases to earlier, complete values")
            if id(k) not in memo:
                stack.append((k, False))


def _short(value: object) -> object:
    """`value`, or its repr shortened when it would make the error line long."""
    r = repr(value)
    return value if len(r) <= _MAX_REPR else _Shown(r[: _MAX_REPR - 3] + "...")


class _Shown(str):
    """A value already written for an error message (its repr is itself)."""

    def __repr__(self) -> str:
        return str(self)


def load_yaml_text(text: str, where: str) -> Any:
    """Parse YAML text with `StrictLoader`.

    Parameters
    ----------
    text : str
        The YAML.
    where : str
        What errors name first (the file).

    Returns
    -------
    object
        The plain data (dict, list, str, int, float, bool, None); ConfigError naming `where` and
        the line for a syntax error or anything `StrictLoader` refuses.
    """
    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - StrictLoader is a SafeLoader
    except _LoadError as e:
        at = f"{where}:{e.problem_mark.line + 1}"
        path = e.path if len(e.path) <= 80 else f"{e.path[:40]}...{e.path[-30:]}"  # deep nesting: keep the line short
        raise ConfigError(f"{at}: {path}" if path else at, e.value, e.accepted) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        at = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = " ".join(str(getattr(e, "problem", "") or type(e).__name__).split())
        raise ConfigError(f"{where}:{mark.line + 1}" if mark is not None else where, "YAML",
                          f"a syntax error{at}: {problem}; accepted: valid YAML") from None


def read_yaml_mapping(path: str | Path, what: str) -> dict:
    """The YAML mapping in a file (`read_input_text`, then `load_yaml_text`).

    Parameters
    ----------
    path : str or Path
        The YAML file.
    what : str
        The top-level keys expected, named in the error for a non-mapping file.

    Returns
    -------
    dict
        The parsed mapping; ConfigError for a missing, odd or oversized file, text that is not
        UTF-8, bad syntax (with its line), a duplicate key, a non-plain value, and a non-mapping.
    """
    data = load_yaml_text(read_input_text(path, what="a YAML file"), str(path))
    if not isinstance(data, dict):
        raise ConfigError(str(path), _short(data) if not isinstance(data, (list, dict)) else type(data).__name__,
                          f"accepted: a YAML mapping with {what}")
    return data


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
        raise ConfigError(f"{where}: {'.'.join(loc)}", _short(value), msg) from None


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

