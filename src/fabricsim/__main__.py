from .cli import _console_main

_console_main()
