"""The Swing reproduction's Table 2 formulas: a small, bounded arithmetic evaluator.

A Table 2 cell of `configs/swing.yaml` may be a formula in p, D and dmax (`2*D*p**(1/D)`);
`eval_formula` evaluates one with numbers, names, + - * / **, log2, sqrt, min and max only, and
bounds it before and while it runs (length, syntax nodes, the size of a power), since a config
formula is a line of a table, not a program. Split from `config` (which re-exports these names)
because it is a self-contained evaluator with no part in the config's data model.
"""

from __future__ import annotations

import ast
import math
import operator

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.USub: operator.neg, ast.UAdd: operator.pos}
_FUNCS = {"log2": math.log2, "sqrt": math.sqrt, "max": max, "min": min}
# a config formula is a line of Table 2, not a program: bound what one may ask for
FORMULA_MAX_CHARS = 1000
FORMULA_MAX_NODES = 200
FORMULA_MAX_LOG10 = 300  # |result| of a power: below 1e300 (floats end near 1.8e308)


def eval_formula(text: str, names: dict[str, float]) -> float:
    """Evaluate a small arithmetic formula (numbers, names, + - * / **, log2, sqrt, min, max).

    The formula is bounded before and while it is evaluated: at most `FORMULA_MAX_CHARS`
    characters and `FORMULA_MAX_NODES` syntax nodes; a power is refused before it is computed
    when its magnitude (estimated from the operands' logarithms) would pass 1e300, so `9**9**9**9`
    returns at once; every intermediate value must be a finite real number.

    Parameters
    ----------
    text : str
        The formula, e.g. `2*D*p**(1/D)`.
    names : dict
        Values of the names it may use.

    Returns
    -------
    float
        The value; ValueError naming what is wrong for anything else (attributes, calls of other
        functions, unknown names, division by zero, log2 of a non-positive number, a power too
        large, an overlong formula).
    """
    text = str(text)
    if len(text) > FORMULA_MAX_CHARS:
        raise ValueError(f"a formula of {len(text)} characters (at most {FORMULA_MAX_CHARS})")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, MemoryError, RecursionError):  # nesting beyond the parser's stack
        raise ValueError("not a formula (syntax)") from None
    count = sum(1 for _ in ast.walk(tree))
    if count > FORMULA_MAX_NODES:
        raise ValueError(f"a formula of {count} elements (at most {FORMULA_MAX_NODES})")

    def real(x) -> float:
        if isinstance(x, complex) or not math.isfinite(x):
            raise ValueError("an intermediate value that is not a finite real number")
        return x

    def ev(node) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            try:
                return real(float(node.value))  # floats throughout: no unbounded integers
            except OverflowError:
                raise ValueError(f"the number {str(node.value)[:20]}... is beyond 1e308") from None
        if isinstance(node, ast.Name) and node.id in names:
            return real(float(names[node.id]))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            return _power(ev(node.left), ev(node.right))
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Div) and b == 0:
                raise ValueError("a division by zero")
            return real(_OPS[type(node.op)](a, b))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return real(_OPS[type(node.op)](ev(node.operand)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS and not node.keywords:
            args = [ev(a) for a in node.args]
            try:
                return real(_FUNCS[node.func.id](*args))
            except (ValueError, TypeError):
                raise ValueError(f"{node.func.id} of {', '.join(f'{a:g}' for a in args) or 'nothing'}") from None
        raise ValueError(f"unsupported element {ast.dump(node)[:40]}")

    return float(ev(tree))


def _power(base: float, exp: float) -> float:
    """`base ** exp`, refused before it is computed when it would not be a finite real number."""
    if base == 0:
        if exp < 0:
            raise ValueError("a division by zero (0 to a negative power)")
        return 1.0 if exp == 0 else 0.0
    if base < 0 and exp != int(exp):
        raise ValueError(f"a negative number to a fractional power ({base:g} ** {exp:g})")
    if exp * math.log10(abs(base)) > FORMULA_MAX_LOG10:
        raise ValueError(f"a power beyond 1e{FORMULA_MAX_LOG10} ({base:g} ** {exp:g})")
    return float(base) ** exp  # at most 1e300 here: no overflow
