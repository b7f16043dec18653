"""The `fabricsim` command line: one module per group of commands, all on one typer app.

Bad input ends in one line on stderr naming the field, the value and what is accepted, and
exit code 2; never a traceback.
"""

from __future__ import annotations

import sys

import typer

from ..errors import ConfigError, ScheduleError
# each module registers its commands on the app, in this order in `fabricsim --help`
from . import collective  # noqa: F401, I001
from . import train  # noqa: F401, I001
from . import astra  # noqa: F401, I001
from . import reproduce  # noqa: F401, I001
from . import topology  # noqa: F401, I001
from . import demo  # noqa: F401, I001
from . import sweep  # noqa: F401, I001
from . import plot  # noqa: F401, I001
from . import plan  # noqa: F401, I001
from .app import app
from .collective import parse_options, run_collective

__all__ = ["app", "main", "parse_options", "run_collective"]

# typer runs on click (vendored in recent releases): take its exception classes from there
_click_exc = sys.modules[typer.BadParameter.__module__]
_ClickExit = getattr(_click_exc, "Exit", typer.Exit)
_ClickAbort = getattr(_click_exc, "Abort", typer.Abort)


def main(argv: list[str] | None = None) -> int:
    """Entry point: runs the app and turns every input error into one line and exit code 2."""
    import contextvars

    cmd = typer.main.get_command(app)
    try:
        from .argv import check_repeated_options

        check_repeated_options(cmd, sys.argv[1:] if argv is None else list(argv))
        # a copied context: `--limit` set for this command does not outlive it
        rv = contextvars.copy_context().run(cmd.main, args=argv, prog_name="fabricsim", standalone_mode=False)
        return int(rv) if isinstance(rv, int) else 0
    except ConfigError as e:
        print(f"fabricsim: error: {e}", file=sys.stderr)
        return 2
    except _click_exc.ClickException as e:
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `fabricsim`: help, not an error
            print(e.format_message(), file=sys.stderr)
            return 0
        msg = " ".join(e.format_message().split())
        print(f"fabricsim: error: {msg}", file=sys.stderr)
        return 2
    except _ClickExit as e:
        return e.exit_code
    except _ClickAbort:
        print("fabricsim: aborted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head`: not an error
        return 0
    except OSError as e:  # the machine refused a file operation mid-run (disk full, permissions changed)
        where = e.filename if e.filename is not None else "file"
        print(f"fabricsim: error: {where}: {e.strerror or e}", file=sys.stderr)
        return 2
    except MemoryError:  # a request the limits did not foresee: say so, not a traceback
        print("fabricsim: error: out of memory; the request is larger than this machine can hold "
              "(docs/limits.md: make it smaller, or run it on a larger machine)", file=sys.stderr)
        return 2
    except ScheduleError as e:  # a bug in an algorithm, not in the input: say so plainly
        print(f"fabricsim: internal error: schedule failed verification: {e}", file=sys.stderr)
        return 1


def _console_main() -> None:
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    _console_main()
