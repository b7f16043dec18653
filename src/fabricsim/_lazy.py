"""Lazy re-exports for package `__init__` files (PEP 562).

A package that re-exports names from its submodules imports each submodule only when one of its
names is first used, so `import fabricsim` (and every `fabricsim` command) does not pay for scipy,
pydantic or protobuf it does not need. `from fabricsim.topology import parse_topology` still works:
the package's `__getattr__` imports `.spec` and returns the name, then keeps it as a module attribute.

    __getattr__, __dir__ = lazy_exports(__name__, {"parse_topology": ".spec", ...})

A re-exported name that is also the name of a submodule of the same package (`collectives.verify`,
the function and the module) would become the module once that submodule is imported; a package
with such a name keeps its eager imports (`fabricsim.collectives` does).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module-level `__getattr__` and `__dir__` of a package with lazy re-exports.

    Parameters
    ----------
    package : str
        The package's `__name__`.
    exports : mapping
        Public name -> the submodule that defines it, relative to the package (`".spec"`).

    Returns
    -------
    (__getattr__, __dir__)
        To assign at the package's module level.
    """

    def __getattr__(name: str) -> object:
        try:
            where = exports[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(where, package), name)
        setattr(sys.modules[package], name, value)  # the next use is a plain attribute lookup
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
