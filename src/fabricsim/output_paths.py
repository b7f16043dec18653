"""Checking output paths before any simulation work starts (the rules: `fabricsim.outputs`).

`check_output_file`, `check_output_dir` and `check_prefix` refuse, as one ConfigError naming the
option, a path that is empty, holds a NUL byte, is a symbolic link or the wrong kind (folder or
regular file), whose nearest existing ancestor is not a writable folder, or that is an input file
or a folder holding one. A folder that is not empty may be replaced (`--force`) only when it
holds an earlier run's results and nothing else (its manifest `MANIFEST`); `prefix_set` lists a
file set already under a prefix. `fabricsim.outputs`, which writes the results, re-exports these.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path

from .errors import ConfigError

MANIFEST = ".fabricsim-output"
"""The file in every result folder that lists the files the run wrote (JSON)."""


def _text(path, field: str, kind: str) -> str:
    """`path` as a string, refused when empty or when it holds a NUL byte (no OS call takes it)."""
    text = os.fsdecode(path) if isinstance(path, (bytes, os.PathLike)) else str(path)
    if not text.strip():
        raise ConfigError(field, text, f"accepted: a {kind} path")
    if "\0" in text:
        raise ConfigError(field, text, f"contains a NUL byte; accepted: a {kind} path")
    return text


def _lstat(p: Path, field: str, text: str):
    """`os.lstat(p)`, None when nothing is there; other OS errors (name too long, a component
    that is a file, no permission) as ConfigError."""
    try:
        return os.lstat(p)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ConfigError(field, text, f"cannot be used ({e.strerror or e}); accepted: a writable path") from None


def _probe(folder: Path) -> str | None:
    """Why `folder` cannot take new entries (None when it can): creates and removes a folder in
    it, since permission bits do not tell (root, read-only mounts, /proc)."""
    name = folder / f".fabricsim-probe-{secrets.token_hex(6)}"
    try:
        os.mkdir(name, 0o700)
        os.rmdir(name)
    except OSError as e:
        return e.strerror or str(e)
    return None


def _check_parent(p: Path, field: str, text: str) -> None:
    """The nearest existing ancestor of `p` must be a folder that takes new entries (missing
    folders below it are created when the results are written)."""
    for anc in p.parents:
        st = _lstat(anc, field, text)
        if st is None:
            continue
        if not os.path.isdir(anc):
            raise ConfigError(field, text, f"{anc} is not a folder; accepted: a path in a folder")
        why = _probe(anc)
        if why:
            raise ConfigError(field, text, f"cannot write in {anc} ({why}); accepted: a writable path")
        return


def _real(p: Path) -> Path:
    """`p` with links resolved where they can be (a link loop leaves it as it is)."""
    try:
        return p.resolve()
    except (OSError, RuntimeError, ValueError):
        return p


def _same(a: Path, b: Path) -> bool:
    """Whether two paths name the same file (through links, `..`, hard links)."""
    if _real(a) == _real(b):
        return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _check_inputs(p: Path, field: str, text: str, inputs: Iterable, folder: bool) -> None:
    """`p` is no input file and (a folder) holds none of them, nor the current folder."""
    real = _real(p)
    cwd = _real(Path.cwd())
    for i in inputs:
        if i is None or str(i) == "":
            continue
        q = Path(os.path.abspath(os.fspath(i)))
        if _same(p, q):
            raise ConfigError(field, text, f"is the input file {os.fspath(i)}; accepted: a path apart from the inputs")
        if folder and real in _real(q).parents:
            raise ConfigError(field, text, f"holds the input {os.fspath(i)}; accepted: a folder apart from the inputs")
    if folder and (real == cwd or real in cwd.parents):
        raise ConfigError(field, text, "is the current folder or holds it; accepted: a new folder")


def check_output_file(path, field: str, inputs: Iterable = ()) -> Path:
    """Check the path of one output file before any work is done.

    Parameters
    ----------
    path : str or Path
        The file to write; an existing regular file may be replaced (atomically, `atomic_file`).
    field : str
        The option or config field named in the error (`--timeline`).
    inputs : iterable of str or Path
        The run's input files; the output may be none of them.

    Returns
    -------
    Path
        The absolute path; ConfigError naming `field` for an empty path, a NUL byte, a folder, a
        symbolic link, a device or pipe, an ancestor that is a file, an unwritable folder, or an
        input.
    """
    text = _text(path, field, "file")
    if text.endswith(("/", os.sep)):
        raise ConfigError(field, text, "is a folder path; accepted: a file path")
    p = Path(os.path.abspath(text))
    st = _lstat(p, field, text)
    if st is not None:
        if os.path.islink(p):
            raise ConfigError(field, text, "is a symbolic link; accepted: a regular file path (links are not written through)")
        if os.path.isdir(p):
            raise ConfigError(field, text, "is a folder; accepted: a file path")
        if not os.path.isfile(p):
            raise ConfigError(field, text, "is not a regular file (a device, pipe or socket); accepted: a regular file path")
    _check_parent(p, field, text)
    _check_inputs(p, field, text, inputs, folder=False)
    return p


def _manifest_files(p: Path, field: str, text: str) -> set[str]:
    """The files an earlier run listed in `p`'s manifest; ConfigError when there is none."""
    m = p / MANIFEST
    refuse = ("is not a folder of fabricsim results (no readable " + MANIFEST + " in it), so --force does not "
              "replace it; accepted: a new or empty folder")
    if not os.path.isfile(m) or os.path.islink(m) or os.lstat(m).st_size > 16 * 2**20:
        raise ConfigError(field, text, refuse)
    try:
        data = json.loads(m.read_text())
        return {str(f) for f in data["files"]}
    except (OSError, ValueError, KeyError, TypeError):
        raise ConfigError(field, text, refuse) from None


def _check_replaceable(p: Path, field: str, text: str) -> None:
    """`p` holds an earlier run's results and nothing else (what --force may delete)."""
    listed = _manifest_files(p, field, text) | {MANIFEST}
    for root, dirs, files in os.walk(p):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            rel = Path(os.path.join(root, name)).relative_to(p).as_posix()
            if rel not in listed:
                raise ConfigError(field, text, f"holds {rel}, which no fabricsim run wrote, so --force does not replace it; "
                                               f"accepted: a new or empty folder (move {rel} away first)")


def check_output_dir(path, field: str, force: bool = False, inputs: Iterable = ()) -> Path:
    """Check a result folder before any work is done.

    Parameters
    ----------
    path : str or Path
        The folder the run will create (or fill, when it exists and is empty).
    field : str
        The option or config field named in the error (`--out`, `CONFIG: output.dir`).
    force : bool
        Allow replacing an earlier result folder (one with a manifest listing all it holds).
    inputs : iterable of str or Path
        The run's input files; the folder may hold none of them.

    Returns
    -------
    Path
        The absolute path; ConfigError naming `field` for an empty path, a NUL byte, a symbolic
        link, a file, a non-empty folder (without `force`), a folder fabricsim did not write
        (with `force`), an unwritable place, or a folder holding an input or the current folder.
    """
    text = _text(path, field, "folder")
    p = Path(os.path.abspath(text))
    st = _lstat(p, field, text)
    if st is not None:
        if os.path.islink(p):
            raise ConfigError(field, text, "is a symbolic link; accepted: a real folder path (links are not written through)")
        if not os.path.isdir(p):
            raise ConfigError(field, text, "is not a folder; accepted: a new folder path")
        _check_inputs(p, field, text, inputs, folder=True)
        try:
            entries = os.listdir(p)
        except OSError as e:
            raise ConfigError(field, text, f"cannot be read ({e.strerror or e}); accepted: a writable folder") from None
        if entries and not force:
            raise ConfigError(field, text, "exists and is not empty (earlier results?); accepted: a new or empty "
                                           "folder, or --force to replace earlier results")
        if entries:
            _check_replaceable(p, field, text)
    _check_parent(p, field, text)  # the results are written beside it first, then renamed
    return p


# ---------------------------------------------------------------- file sets under a prefix

_SET_SUFFIX = re.compile(r"\.(\d+\.et(\.gz)?|groups\.json)")


def prefix_set(prefix) -> list[Path]:
    """The files of a Chakra trace set already under `prefix`: `PREFIX.<r>.et`, `PREFIX.<r>.et.gz`
    and `PREFIX.groups.json` (links included, not followed).

    Parameters
    ----------
    prefix : str or Path
        The trace prefix (`DIR/NAME`).

    Returns
    -------
    list of Path
        Sorted; empty when the folder does not exist.
    """
    p = Path(os.path.abspath(os.fspath(prefix)))
    try:
        names = os.listdir(p.parent)
    except OSError:
        return []
    head = p.name
    return sorted(p.parent / n for n in names
                  if n.startswith(head) and _SET_SUFFIX.fullmatch(n[len(head):]))


def check_prefix(prefix, field: str, force: bool = False, inputs: Iterable = ()) -> Path:
    """Check a file-set prefix (`export chakra -o PREFIX`) before any work is done.

    Parameters
    ----------
    prefix : str or Path
        `DIR/NAME`: the files are `DIR/NAME.<r>.et` and `DIR/NAME.groups.json`.
    field : str
        The option named in errors (`--output`).
    force : bool
        Allow replacing an earlier set under this prefix.
    inputs : iterable of str or Path
        Input files the set may not overwrite or remove.

    Returns
    -------
    Path
        The absolute prefix; ConfigError naming `field` for an empty prefix or name, a NUL byte, a
        folder, an unwritable place, an earlier set (without `force`), an old file that is a
        folder, or an input among the old set.
    """
    text = _text(prefix, field, "file prefix")
    p = Path(os.path.abspath(text))
    if text.endswith(("/", os.sep)) or os.path.isdir(p) or p.name in ("", ".", ".."):
        raise ConfigError(field, text, "is a folder; accepted: a file prefix such as DIR/NAME (writes DIR/NAME.0.et ...)")
    _lstat(p, field, text)
    _check_parent(p, field, text)
    old = prefix_set(p)
    if old and not force:
        raise ConfigError(field, text, f"earlier files exist ({old[0].name} ...); accepted: a new prefix, "
                                       "or --force to replace the earlier set")
    for f in old:
        if os.path.isdir(f) and not os.path.islink(f):
            raise ConfigError(field, text, f"{f} is a folder; accepted: a prefix whose set holds files only")
    for i in inputs:
        if i is None or str(i) == "":
            continue
        q = Path(os.path.abspath(os.fspath(i)))
        if any(_same(f, q) for f in old) or (_real(q.parent) == _real(p.parent)
                                            and q.name.startswith(p.name) and _SET_SUFFIX.fullmatch(q.name[len(p.name):])):
            raise ConfigError(field, text, f"would overwrite the input {os.fspath(i)}; accepted: a prefix apart from the inputs")
    return p
