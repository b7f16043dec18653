"""Command lines checked before the commands parse them: an option that takes one value, given twice.

click keeps the last of `-s 1MiB -s 2MiB` (and of `--verify --no-verify`) in silence; fabricsim
refuses it instead, as it refuses a topology option, an algorithm option (`--option KEY=...`), a
`--limit NAME=...` or an `--endpoint` field given twice: each once.
"""

from __future__ import annotations

from ..errors import ConfigError


def _options(cmd) -> dict:
    """Every spelling of `cmd`'s options (`--sizes`, `-s`, `--no-verify`) -> the option."""
    out = {}
    for p in getattr(cmd, "params", ()):
        if getattr(p, "param_type_name", "") == "option":
            for name in (*p.opts, *p.secondary_opts):
                out[name] = p
    return out


def _takes_value(opt) -> bool:
    return not opt.is_flag and not opt.count and opt.nargs != 0


def check_repeated_options(cmd, args: list[str]) -> None:
    """None, or a ConfigError naming the first option that takes one value (or a flag) and is given
    twice on the command line `args` of the click command `cmd` (its subcommands followed as named).

    Parameters
    ----------
    cmd : click.Command
        The app's command (`typer.main.get_command(app)`).
    args : list of str
        The arguments after the program name.

    Examples
    --------
    >>> import typer
    >>> from fabricsim.cli import app
    >>> check_repeated_options(typer.main.get_command(app), ["collective", "-s", "1MiB", "--sizes=2MiB"])
    Traceback (most recent call last):
    ...
    fabricsim.errors.ConfigError: --sizes: invalid value '2MiB'; option '--sizes' is given twice (first '1MiB'); accepted: each option once
    """
    seen: dict = {}
    opts = _options(cmd)
    i = 0
    while i < len(args):
        tok = str(args[i])
        i += 1
        if tok == "--":
            return
        if not tok.startswith("-") or tok == "-":
            sub = getattr(cmd, "commands", {}).get(tok)
            if sub is not None:  # a subcommand: its own options from here on
                cmd, opts, seen = sub, _options(sub), {}
            continue
        name, eq, value = tok.partition("=")
        opt = opts.get(name)
        if opt is None and not tok.startswith("--") and len(tok) > 2:  # -s1MiB: a short option and its value
            opt, value, eq = opts.get(tok[:2]), tok[2:], "="
            name = tok[:2]
        if opt is None:  # unknown (click says so), or a negative number given as a value
            continue
        if _takes_value(opt) and not eq:
            value = str(args[i]) if i < len(args) else ""
            i += opt.nargs
        if opt.multiple or opt.count:
            continue
        long_name = "/".join((max(opt.opts, key=len), *opt.secondary_opts))  # --verify/--no-verify
        if id(opt) in seen:
            first = seen[id(opt)]
            raise ConfigError(long_name, value if _takes_value(opt) else name,
                              f"option {long_name!r} is given twice (first {first!r}); accepted: each option once")
        seen[id(opt)] = value if _takes_value(opt) else name
