"""Writing results without losing data: the one place every command's output paths go through.

Rules (docs/cli.md, "Output files"):

- Every output path is checked before any simulation work starts (`check_output_dir`,
  `check_output_file`, `check_prefix`): not empty, no NUL byte, not a symbolic link, the right
  kind (folder or regular file), its nearest existing ancestor a writable folder, and neither an
  input file nor a folder holding one. A bad path is one ConfigError naming the option.
- A result folder is fresh: it does not exist yet or is empty. `--force` replaces an earlier
  result folder, and only one fabricsim wrote: it carries the manifest `.fabricsim-output` (the
  files it holds) and nothing else. The run writes into a temporary sibling folder, which is
  renamed into place at the end (`fresh_dir`): an interrupted run leaves the earlier results
  intact, never a mix of old and new files.
- A single file named explicitly (`--timeline F.csv`, `--plot F.png`) may replace an existing
  regular file; it is written to a temporary file beside it and renamed over it (`atomic_file`),
  never through a symbolic link.
- A file set under a prefix (Chakra traces `PREFIX.<r>.et`) is replaced as a whole
  (`prefix_set`, `replace_files`): the new files are written to temporary files first, then
  renamed into place, then the rest of the old set is removed.

Temporary names start with a dot and the target's name, so they are easy to recognise and
never collide with results.

The checks (`check_output_dir`, `check_output_file`, `check_prefix`, `prefix_set`, `MANIFEST`)
are in `fabricsim.output_paths`, re-exported here; this module writes.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from .errors import ConfigError
from .output_paths import MANIFEST, check_output_dir, check_output_file

# re-exported: the prefix checks, with the checks above (`fabricsim.output_paths`)
from .output_paths import check_prefix, prefix_set  # noqa: F401


def _write_manifest(folder: Path) -> None:
    files = sorted(Path(r, f).relative_to(folder).as_posix() for r, _, fs in os.walk(folder) for f in fs)
    (folder / MANIFEST).write_text(json.dumps({"written_by": "fabricsim", "files": files}, indent=1) + "\n")


def _oserror(field: str, text: str, e: OSError) -> ConfigError:
    return ConfigError(field, text, f"cannot be written ({e.strerror or e}); accepted: a writable path")


@contextlib.contextmanager
def fresh_dir(path, field: str, force: bool = False, inputs: Iterable = ()) -> Iterator[Path]:
    """Write a result folder as a whole: yields a temporary sibling folder to write into, renamed
    to `path` when the block ends without an error (an earlier result folder, with `force`, is
    moved aside first and removed after); on an error the temporary folder is removed and the
    earlier results stay as they were.

    Parameters
    ----------
    path : str or Path
        The result folder (checked again with `check_output_dir`).
    field : str
        The option or config field named in errors.
    force : bool
        Replace an earlier result folder (see `check_output_dir`).
    inputs : iterable of str or Path
        Input files the folder may not hold.

    Yields
    ------
    Path
        The folder to write into; files written there appear under `path`. The manifest
        `.fabricsim-output` is added at the end.
    """
    target = check_output_dir(path, field, force, inputs)
    text = str(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _oserror(field, text, e) from None
    tmp = _fresh_name(target, "tmp", directory=True, field=field, text=text)
    try:
        yield tmp
        _write_manifest(tmp)
        _swap_in(tmp, target, field, text)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _fresh_name(target: Path, tag: str, *, directory: bool, field: str, text: str, mode: int = 0o777):
    """Create a new hidden folder (or file, returning its descriptor too) beside `target`,
    exclusively (O_EXCL: an existing name or link is never reused); the umask applies."""
    for _ in range(100):
        p = target.parent / f".{target.name}.{secrets.token_hex(4)}.{tag}"
        try:
            if directory:
                os.mkdir(p, mode)
                return p
            return p, os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
        except FileExistsError:
            continue
        except OSError as e:
            raise _oserror(field, text, e) from None
    raise ConfigError(field, text, f"no free temporary name in {target.parent}; accepted: a writable path")


def _swap_in(tmp: Path, target: Path, field: str, text: str) -> None:
    """Rename `tmp` to `target`; an existing `target` (checked replaceable) is moved aside first
    and removed once the new folder is in place."""
    old = None
    try:
        if os.path.lexists(target):
            if os.path.islink(target) or not os.path.isdir(target):
                raise ConfigError(field, text, "was replaced by a file or link during the run; accepted: a new folder path")
            if os.listdir(target):
                old = _fresh_name(target, "old", directory=True, field=field, text=text)
                os.rename(target, old)  # replaces the empty placeholder folder
            else:
                os.rmdir(target)
        os.rename(tmp, target)
    except OSError as e:
        if old is not None and not os.path.lexists(target):
            os.rename(old, target)  # put the earlier results back
            old = None
        raise _oserror(field, text, e) from None
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def atomic_file(path, field: str, binary: bool = False, newline: str | None = None) -> Iterator:
    """Open a temporary file beside `path` for writing; it replaces `path` (os.replace: a reader
    sees the old file or the new one, never a part) when the block ends without an error, and is
    removed otherwise. Never writes through a symbolic link.

    Parameters
    ----------
    path : str or Path
        The file (its folder is created); checked with `check_output_file` first.
    field : str
        The option or config field named in errors.
    binary : bool
        Open in binary mode.
    newline : str, optional
        As `open`'s (text mode; `""` for csv).

    Yields
    ------
    file object
    """
    target = check_output_file(path, field)
    text = str(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _oserror(field, text, e) from None
    tmp, fd = _fresh_name(target, "tmp", directory=False, field=field, text=text)
    try:
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", newline=newline, encoding="utf-8")) as fh:
            yield fh
        if os.path.islink(target) or os.path.isdir(target):
            raise ConfigError(field, text, "became a link or a folder during the run; accepted: a regular file path")
        os.replace(tmp, target)
    except OSError as e:
        _unlink(tmp)
        raise _oserror(field, text, e) from None
    except BaseException:
        _unlink(tmp)
        raise


def _unlink(p: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(p)


def write_bytes_atomic(path, data: bytes, field: str) -> Path:
    """Write a binary file atomically (`atomic_file`).

    Parameters
    ----------
    path : str or Path
        The file.
    data : bytes
        Its content.
    field : str
        Named in errors.

    Returns
    -------
    Path
        `path`.
    """
    with atomic_file(path, field, binary=True) as fh:
        fh.write(data)
    return Path(path)



@contextlib.contextmanager
def replace_files(field: str, value: str, old: Iterable = ()) -> Iterator:
    """Write a set of files together: yields `stage(path) -> file object (binary)`; each staged
    file goes to a temporary file beside its target, and only when the block ends without an
    error are they renamed into place (os.replace) and the files of `old` that were not rewritten
    removed. On an error every temporary file is removed and the earlier set is untouched.

    Parameters
    ----------
    field : str
        The option named in errors.
    value : str
        The value named in errors (the prefix).
    old : iterable of Path
        The earlier set (`prefix_set`), removed once the new one is in place.

    Yields
    ------
    callable
        `stage(path)`: a binary file object to write `path`'s content to; close it (or use it as
        a context manager) before the block ends.
    """
    staged: list[tuple[Path, Path]] = []

    def stage(path):
        target = Path(os.path.abspath(os.fspath(path)))
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise _oserror(field, value, e) from None
        tmp, fd = _fresh_name(target, "tmp", directory=False, field=field, text=value)
        staged.append((tmp, target))
        return os.fdopen(fd, "wb")

    try:
        yield stage
        for tmp, target in staged:
            if os.path.isdir(target) and not os.path.islink(target):
                raise ConfigError(field, value, f"{target} is a folder; accepted: a prefix whose set holds files only")
            os.replace(tmp, target)  # a link at the target is replaced, not followed
    except OSError as e:
        for tmp, _ in staged:
            _unlink(tmp)
        raise _oserror(field, value, e) from None
    except BaseException:
        for tmp, _ in staged:
            _unlink(tmp)
        raise
    written = {t for _, t in staged}
    for f in old:
        if Path(os.path.abspath(f)) not in written:
            _unlink(Path(f))
