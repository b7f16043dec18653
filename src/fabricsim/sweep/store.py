"""A sweep's results folder: a small database of Parquet parts, a manifest and a lock.

```
DIR/
  _fabricsim-sweep.json     the manifest: the sweep it belongs to (name, kind, fingerprint, points)
  .fabricsim-sweep.lock     flock'ed by the one writer (released by the kernel when it exits, even on kill -9)
  part-<ns>-<pid>-<n>-<rows>r-<sha>.parquet    rows, each part written whole (temporary name, fsync, rename)
  _damaged/                 parts that failed their check, moved aside (their points are run again)
```
- A part's name carries its row count and the first 16 hex digits of the SHA-256 of its bytes, so
  every read checks it whole: the bytes (any damage), the footer (it parses) and the row count
  (footer == name). Parts of earlier versions (`part-<ns>-<pid>-<n>.parquet`, no checksum) are
  checked by decoding every column and comparing the rows with the footer's count.
- The writer (`open_results`) holds the lock for the whole run: a second writer is refused in one
  line naming `--out`. It moves damaged parts to `_damaged/` (they are fabricsim's own), removes its
  stale temporaries, and ignores other files with a note; it never changes what it did not write.
- The manifest names the sweep by a fingerprint of its points (`fingerprint`); a folder of another
  sweep is refused unless `force` (which removes that sweep's parts first). Readers (`scan`,
  `read_results`) change nothing. Names fabricsim adds beside the parts begin with `_` or `.`, so
  `pyarrow.parquet.read_table(DIR)` still reads the folder (unchecked).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

from ..errors import ConfigError

MANIFEST = "_fabricsim-sweep.json"
LOCK = ".fabricsim-sweep.lock"
DAMAGED = "_damaged"
FORMAT = "fabricsim sweep results"
PART = re.compile(r"part-(\d+)-(\d+)-(\d+)(?:-(\d+)r-([0-9a-f]{16}))?\.parquet")
TMP = re.compile(r"\.(?:part-\d+-\d+-\d+\.parquet|_fabricsim-sweep\.json\.\d+)\.tmp")
ACCEPTED = "accepted: a new or empty folder, or the results folder of this sweep"
_lock_fd: int | None = None  # the held lock's descriptor: forked pool workers close their copy


def fingerprint(kind: str, hashes: Iterable[str]) -> str:
    """The identity of a sweep: SHA-256 of its kind and its points' hashes (order-free).

    Parameters
    ----------
    kind : str
    hashes : iterable of str

    Returns
    -------
    str
        64 hex digits.

    Examples
    --------
    >>> fingerprint("collective", ["b", "a"]) == fingerprint("collective", ["a", "b"])
    True
    """
    h = hashlib.sha256(kind.encode())
    for x in sorted(set(hashes)):
        h.update(b"\0" + x.encode())
    return h.hexdigest()


@dataclasses.dataclass
class Scan:
    """What a results folder holds.

    Attributes
    ----------
    parts : list of Path
        Parts that passed their check, in name order.
    rows : dict
        hash -> error (None for a point without one), over the good parts (first part wins).
    damaged : list of (Path, str)
        Parts that failed their check, and why.
    foreign : list of Path
        Entries fabricsim did not write (ignored).
    temporaries : list of Path
        Leftover temporaries of a writer that was stopped.
    manifest : dict or None
        The manifest (None when absent or unreadable).
    duplicates : int
        Rows whose hash an earlier part already holds (left out).
    """

    parts: list = dataclasses.field(default_factory=list)
    rows: dict = dataclasses.field(default_factory=dict)
    damaged: list = dataclasses.field(default_factory=list)
    foreign: list = dataclasses.field(default_factory=list)
    temporaries: list = dataclasses.field(default_factory=list)
    manifest: dict | None = None
    duplicates: int = 0

    def notes(self, how: str = "read") -> list[str]:
        """One-line notes on what was left out: damaged parts, foreign files, repeated rows.

        Parameters
        ----------
        how : str
            What becomes of a damaged part's points: `read` (a reader leaves its rows out),
            `dry` (a run would move it aside and run them again), `moved` (moved aside, run again).
        """
        fate = {"read": "its rows are left out (running the sweep again recomputes them)",
                "dry": f"a run moves it to {DAMAGED}/ and runs its points again",
                "moved": f"moved to {DAMAGED}/, its points run again"}[how]
        out = [f"note: {p.name} is damaged ({why}); {fate}" for p, why in self.damaged]
        out += [f"note: ignoring {p.name}: not a part of this sweep's results" for p in self.foreign
                if p.suffix == ".parquet"]  # other files (a plan's best.yaml, notes) could never pass for one
        if self.duplicates:
            out.append(f"note: left out {self.duplicates} rows of points an earlier part already holds")
        return out


def _table(path: Path, columns: list[str] | None):
    """A part's rows after its check: (table, None), or (None, why it is damaged)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    m = PART.fullmatch(path.name)
    try:
        data = path.read_bytes()
        if m and m.group(5):
            if hashlib.sha256(data).hexdigest()[:16] != m.group(5):
                return None, f"{len(data)} bytes, not the ones written (checksum)"
            f = pq.ParquetFile(pa.BufferReader(data))
            if f.metadata.num_rows != int(m.group(4)):
                return None, f"{f.metadata.num_rows} rows, {m.group(4)} written"
            t = f.read(columns=[c for c in columns if c in f.schema_arrow.names] if columns else None)
        else:  # no checksum: decode every column, the rows must be the footer's count
            f = pq.ParquetFile(pa.BufferReader(data))
            t = f.read()
            if t.num_rows != f.metadata.num_rows:
                return None, f"{t.num_rows} rows decoded, {f.metadata.num_rows} in the footer"
            t = t.select([c for c in columns if c in t.column_names]) if columns else t
    except OSError as e:
        return None, f"unreadable: {e.strerror or e}"
    except (pa.ArrowException, ValueError, KeyError) as e:
        return None, " ".join(str(e).split())[:120] or type(e).__name__
    if "hash" not in t.column_names:
        return None, "no hash column"
    return t, None


def _entries(out: Path, s: Scan) -> list[Path]:
    """Sort a folder's entries into s (manifest, foreign, temporaries); returns the candidate parts."""
    cands = []
    known_manifest = (out / MANIFEST).is_file()
    for p in sorted(out.iterdir()):
        if p.name in (MANIFEST, LOCK) or (p.name == DAMAGED and p.is_dir()):
            continue
        if TMP.fullmatch(p.name):
            s.temporaries.append(p)
        elif p.is_file() and not p.is_symlink() and (PART.fullmatch(p.name) or
                                                      (not known_manifest and p.suffix == ".parquet")):
            cands.append(p)  # without a manifest (a folder of an earlier version): any Parquet file may be one
        else:
            s.foreign.append(p)
    return cands


def scan(out: str | Path, columns: list[str] | None = ("hash", "error"), tables: list | None = None) -> Scan:
    """Check every part of a results folder; change nothing.

    Parameters
    ----------
    out : str or Path
        The folder (may not exist: an empty scan).
    columns : list of str, optional
        The columns read for `Scan.rows` (None: all of them).
    tables : list, optional
        Receives each good part's table (the `columns` read).

    Returns
    -------
    Scan
    """
    import pyarrow as pa

    out = Path(out)
    s = Scan()
    if not out.is_dir():
        return s
    s.manifest = read_manifest(out)
    for p in _entries(out, s):
        t, why = _table(p, list(columns) if columns else None)
        if why is not None:  # only a part fabricsim named is damaged (and moved); another file is not ours
            (s.damaged.append((p, why)) if PART.fullmatch(p.name) else s.foreign.append(p))
            continue
        hashes = t.column("hash").to_pylist()
        errors = t.column("error").to_pylist() if "error" in t.column_names else [None] * len(hashes)
        keep = []
        for i, (h, e) in enumerate(zip(hashes, errors)):
            if h in s.rows:
                s.duplicates += 1
            else:
                s.rows[h] = e or None
                keep.append(i)
        s.parts.append(p)
        if tables is not None:
            tables.append(t if len(keep) == t.num_rows else t.take(pa.array(keep, pa.int64())))
    return s


def read_manifest(out: Path) -> dict | None:
    """The folder's manifest, or None (absent, or not a manifest fabricsim wrote)."""
    try:
        d = json.loads((Path(out) / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return d if isinstance(d, dict) and d.get("format") == FORMAT else None


def _write_atomic(path: Path, data: bytes) -> None:
    """Write a file whole: a temporary beside it, fsync, rename, fsync the folder."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _sync_dir(path.parent)


def _sync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_part(out: Path, table, n: int) -> Path:
    """Write one part whole (temporary name, fsync, rename) under a name with its rows and checksum.

    Parameters
    ----------
    out : Path
        The results folder.
    table : pyarrow.Table
        The rows.
    n : int
        The writer's part counter (keeps names of one process distinct).

    Returns
    -------
    Path
        The part written.
    """
    import pyarrow.parquet as pq

    stem = f"part-{time.time_ns()}-{os.getpid()}-{n:05d}"
    tmp = out / f".{stem}.parquet.tmp"
    pq.write_table(table, tmp)
    data = tmp.read_bytes()
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    final = out / f"{stem}-{table.num_rows}r-{hashlib.sha256(data).hexdigest()[:16]}.parquet"
    os.replace(tmp, final)  # whole or absent
    _sync_dir(out)
    return final


# ---------------------------------------------------------------- the writer's side


def _field_error(out: Path, what: str, field: str = "--out") -> ConfigError:
    return ConfigError(field, str(out), f"{what}; {ACCEPTED}")


def make_folder(out: Path, field: str = "--out") -> None:
    """Create the results folder (and its parents); ConfigError naming `field` when that fails."""
    if out.exists() and not out.is_dir():
        raise _field_error(out, "is a file, not a folder", field)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(field, str(out), f"cannot be created ({e.strerror or e}); accepted: a folder in a place "
                                           "this user can write") from None


@contextlib.contextmanager
def locked(out: Path, field: str = "--out"):
    """Hold the folder's writer lock (flock on `LOCK`) for a block; refused at once when held.

    Parameters
    ----------
    out : Path
        An existing results folder.
    field : str
        The option named when another writer holds it.

    Yields
    ------
    None
        ConfigError (one line naming `field`, the folder and the other writer's pid) when another
        process holds the lock. The kernel releases it when this process ends, however it ends.
    """
    import fcntl

    global _lock_fd
    try:
        fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise ConfigError(field, str(out), f"cannot be written ({e.strerror or e}); accepted: a folder this "
                                           "user can write") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        other = os.read(fd, 32).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise ConfigError(field, str(out), f"another fabricsim sweep (pid {other}) is writing to this folder; "
                                           "accepted: a folder no other sweep is writing to (let that one finish, "
                                           "or choose another --out)") from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _lock_fd = fd
        yield
    finally:
        _lock_fd = None
        os.close(fd)  # releases the lock


def release_inherited_lock() -> None:
    """In a forked worker: close its copy of the parent's lock descriptor, so that the lock goes with
    the parent (a lock shared with orphaned workers would outlive a killed sweep)."""
    if _lock_fd is not None:
        with contextlib.suppress(OSError):
            os.close(_lock_fd)


def check_identity(out: Path, s: Scan, ident: dict, hashes: set, force: bool, field: str = "--out") -> bool:
    """Whether the folder may take this sweep's rows; True when its earlier results must go first.

    Parameters
    ----------
    out : Path
        The folder.
    s : Scan
        Its scan.
    ident : dict
        This sweep's `name`, `kind`, `fingerprint`, `points`.
    hashes : set of str
        This sweep's points' hashes (a folder of an earlier version, without a manifest, is this
        sweep's when all its rows are points of it).
    force : bool
        Take the folder of another sweep (its results are removed).
    field : str
        The option named in the error.

    Returns
    -------
    bool
        ConfigError naming `field` when the folder is another sweep's (and not `force`), or holds
        nothing fabricsim wrote but other files (and not `force`).
    """
    m = s.manifest
    if m is not None:
        if m.get("fingerprint") == ident["fingerprint"]:
            return False
        what = f"holds the results of sweep {m.get('name')!r} ({m.get('points')} points), not of this one " \
               f"{ident['name']!r} ({ident['points']} points)"
    elif s.parts or s.damaged:
        if set(s.rows) <= hashes:  # an earlier version's folder of this sweep
            return False
        what = "holds results of another sweep (rows of points this sweep does not have)"
    elif s.foreign:
        if force:
            return False
        raise _field_error(out, f"holds files fabricsim did not write (e.g. {s.foreign[0].name})", field)
    else:
        return False
    if not force:
        raise ConfigError(field, str(out), f"{what}; accepted: a new or empty folder, this sweep's folder, or "
                                           "--force to replace those results")
    return True


def clear(out: Path, s: Scan) -> None:
    """Remove an earlier sweep's results from a folder: its parts, damaged parts and manifest (what
    fabricsim wrote; other files stay)."""
    for p in s.parts + [p for p, _ in s.damaged] + s.temporaries:
        if PART.fullmatch(p.name) or TMP.fullmatch(p.name) or s.manifest is not None:
            p.unlink(missing_ok=True)
    dmg = out / DAMAGED
    if dmg.is_dir():
        for p in dmg.iterdir():
            if PART.fullmatch(p.name.split("~")[0]):
                p.unlink(missing_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)


def move_damaged(out: Path, s: Scan) -> None:
    """Move the scan's damaged parts to `DAMAGED/` (never over an earlier one) and drop stale temporaries."""
    if s.damaged:
        (out / DAMAGED).mkdir(exist_ok=True)
    for p, _why in s.damaged:
        dest, k = out / DAMAGED / p.name, 1
        while dest.exists():
            dest, k = out / DAMAGED / f"{p.name}~{k}", k + 1
        os.replace(p, dest)
    for p in s.temporaries:
        p.unlink(missing_ok=True)


def fabricsim_version() -> str:
    """The installed fabricsim's version, as rows and manifests record it (`unknown` when it is
    not installed as a distribution)."""
    try:
        from importlib.metadata import version

        return version("fabricsim")
    except Exception:  # pragma: no cover - not installed as a distribution
        return "unknown"


def write_manifest(out: Path, ident: dict) -> None:
    """Write the manifest naming this sweep (atomically)."""
    data = {"format": FORMAT, **ident, "fabricsim": fabricsim_version()}
    _write_atomic(out / MANIFEST, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())


@contextlib.contextmanager
def open_results(out: str | Path, ident: dict | None = None, hashes: set | None = None, force: bool = False,
                 field: str = "--out"):
    """Open a results folder for writing: created, locked, checked, repaired.

    Parameters
    ----------
    out : str or Path
        The folder.
    ident : dict, optional
        The sweep (`name`, `kind`, `fingerprint`, `points`): checked against the manifest and
        written as it. None: no manifest (a library caller that shares the folder, `fabricsim plan`).
    hashes : set of str, optional
        The sweep's points' hashes (with `ident`).
    force : bool
        Replace another sweep's results.
    field : str
        The option named in errors.

    Yields
    ------
    Scan
        The folder after repair: its good parts and rows; `notes()` says what was moved or ignored.
    """
    out = Path(out)
    if ident is not None and out.is_dir() and not (out / LOCK).exists():  # not one fabricsim wrote yet:
        check_identity(out, scan(out), ident, hashes or set(), force, field)  # refused before the lock file
    make_folder(out, field)
    with locked(out, field):
        s = scan(out)
        if ident is not None:
            replace = check_identity(out, s, ident, hashes or set(), force, field)
            if replace:
                clear(out, s)
            if replace or (s.manifest or {}).get("fingerprint") != ident["fingerprint"]:
                write_manifest(out, ident)
                s = scan(out)  # with the manifest: files not named as parts are no longer read as parts
        move_damaged(out, s)
        yield s
