"""`leaf`: `fabricsim.kernels.kernel` for a kernel function that allocates no array.

numba counts the references of every array a compiled function touches, with atomic increments
and decrements of the array's memory record; it prunes pairs inside straight code, not around a
branch, so a small helper with an `if` called per class or per link pays two atomic operations per
array argument per call. In the flow model's event loop those were about half of all the time (a
64-GPU training run: about 200 pairs per event, 12 ns each). A function that allocates nothing and
returns no array needs no counting: the caller holds every array it is given for the call. `leaf`
compiles such a function with numba's runtime off (`_nrt=False`: no reference counting; allocating
in it fails to compile, so a wrong use cannot go unnoticed). Results are the same bits: counting
references changes no arithmetic. The Python build (`fabricsim.kernels`) is the plain function.
"""

from __future__ import annotations

from typing import Callable

from ...kernels import _PYTHON


def leaf(fn: Callable) -> Callable:
    """Decorate a kernel function that allocates no array and returns none (module doc):
    numba-compiled without reference counting (cached on disk), plain Python in its module's
    Python build."""
    if fn.__module__.endswith(_PYTHON):
        return fn
    from numba import njit  # lazy, as `kernels.kernel`

    return njit(cache=True, _nrt=False)(fn)
