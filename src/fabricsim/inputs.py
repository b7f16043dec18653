"""Reading input files: every text file a user points fabricsim at, and the strict YAML loader.

Every text file goes through `read_input_text`: only a regular file within the `file_bytes`
limit, in UTF-8. Every YAML config goes through `read_yaml_mapping` (`config.load_yaml` adds the
validation): plain data only (mappings, lists, text, numbers within 64 bits, true/false, null),
each key once, at most `MAX_DEPTH` levels deep. A syntax or loading error names the file and line.
Needs no pydantic (`fabricsim astra` reads files without it); the names are re-exported by
`fabricsim.config`, which validates what is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError
from .limits import check_limit, current_limits
from .units import format_size

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
        """An integer, refused beyond 64 bits (before converting very long digit strings), and
        refused where YAML 1.1 reads it unlike what is written: base 60 (`12:30:00` is 45000) and
        a leading zero (`010` is octal 8); YAML 1.2 reads neither so."""
        text = str(node.value)
        if len(text.replace("_", "")) > 40:  # no 64-bit integer is written this long
            raise self._error(node, _short(text), _INT_ACCEPTED)
        digits = text.lstrip("+-").replace("_", "")
        if ":" in digits:
            raise self._error(node, text, "YAML 1.1 reads this as a base-60 number "
                                          f"({super().construct_yaml_int(node)}); accepted: a plain decimal number, "
                                          "or text in quotes")
        if len(digits) > 1 and digits[0] == "0" and digits[1:2].isdigit():
            sign = "-" if text.startswith("-") else ""
            raise self._error(node, text, f"YAML 1.1 reads a leading zero as octal ({super().construct_yaml_int(node)}); "
                                          f"accepted: the number without the leading zero ({sign}{int(digits)})")
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


def _construct_float(loader: StrictLoader, node) -> float:
    """A float, refused in YAML 1.1's base 60 (`1:30.5` is 90.5), which YAML 1.2 reads as text."""
    if ":" in str(node.value):
        raise loader._error(node, str(node.value), f"YAML 1.1 reads this as a base-60 number "
                                                   f"({loader.construct_yaml_float(node)}); accepted: a plain decimal "
                                                   "number, or text in quotes")
    return loader.construct_yaml_float(node)


StrictLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)


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
