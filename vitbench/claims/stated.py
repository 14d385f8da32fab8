"""A figure as a document states it: its value in base units, its unit and its precision.

The precision comes from the digits shown, whatever the spelling of the unit: "86M", "86 M",
"86 million" and "86,000,000" all state 86 x 10^6 to the nearest million; "86.0M" to the nearest
hundred thousand; "0.344 GB" and "344 MB" to the nearest megabyte. Decimals are significant;
an integer's trailing zeros are not when they make whole thousands ("86,527,000" and "86527000"
are stated to the thousand, "4,000" too), and are otherwise ("600", "1,200").

A hedge ("approximately", "~", "≈") adds nothing: a rounded figure is approximate by nature, and
its digits say how far. The same figure therefore gets the same tolerance wherever it appears.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from dataclasses import dataclass

_PREFIXES = {
    "": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
    "thousand": 1e3, "million": 1e6, "billion": 1e9,
}
BYTE_UNITS = {
    "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
    "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
}
#: The same unit in the other base: what a document means when it writes MB but computed MiB.
OTHER_BASE = {"KB": "KiB", "MB": "MiB", "GB": "GiB", "TB": "TiB", "KiB": "KB", "MiB": "MB", "GiB": "GB", "TiB": "TB"}
_NUMBER = r"\d[\d,]*(?:\.\d+)?"
_TEXT = re.compile(
    rf"^(?P<bound>over|more than|under|less than)?\s*(?P<a>{_NUMBER})"
    rf"(?:\s*(?:-|–|to)\s*(?P<b>{_NUMBER}))?(?P<space>\s*)(?P<unit>.*?)\s*$"
)
_BOUNDS = {"over": ">", "more than": ">", "under": "<", "less than": "<"}
_COMPUTE_UNIT = re.compile(r"(K|M|G|T|thousand|million|billion)?\s*(FLOPs|MACs)?")


@dataclass(frozen=True)
class Stated:
    """A figure as the document writes it, parsed: value(s) in base units and its precision."""

    text: str
    low: float
    high: float  # == low unless a range
    bound: str | None  # '>' or '<' for "over 600 MB"
    scale: float  # base units per displayed unit (1e6 for "M" or "MB")
    prefix: str  # display prefix as written ("M", " million", "")
    unit: str  # "FLOPs", "MACs", "MB", "×", "img/s", ""
    kind: str  # compute | bytes | ratio | throughput | count
    decimals: int
    resolution: float  # one unit of the last stated digit, in base units

    @property
    def value(self) -> float | tuple[float, float]:
        return self.low if self.low == self.high else (self.low, self.high)

    @property
    def is_range(self) -> bool:
        return self.low != self.high

    @property
    def is_point(self) -> bool:
        """One number: not a range, not a bound."""
        return not self.bound and not self.is_range


def digit_resolution(number: str) -> tuple[int, float]:
    """(decimals, one unit of the last significant digit) of a number as written, in its own
    unit: '17.5' -> (1, 0.1); '86' -> (0, 1); '86,527,000' and '86527000' -> (0, 1000);
    '600' -> (0, 1). Trailing zeros count as rounding only in whole thousands."""
    digits = number.replace(",", "")
    if "." in digits:
        decimals = len(digits.split(".")[1])
        return decimals, 10.0**-decimals
    zeros = len(digits) - len(digits.rstrip("0"))
    if zeros == len(digits):  # "0"
        zeros = 0
    return 0, 1000.0 ** (zeros // 3)


def _unit(unit_text: str, text: str) -> tuple[str, str, str, float]:
    """(kind, unit, prefix, scale) of the text after the number."""
    if unit_text in ("×", "x"):
        return "ratio", "×", "", 1.0
    if unit_text == "img/s":
        return "throughput", " img/s", "", 1.0
    if unit_text in BYTE_UNITS:
        return "bytes", unit_text, "", float(BYTE_UNITS[unit_text])
    match = _COMPUTE_UNIT.fullmatch(unit_text)
    if not match:
        raise ValueError(f"unknown unit {unit_text!r} in {text!r}")
    prefix_word, word = match.groups()
    prefix = (" " if prefix_word and len(prefix_word) > 1 else "") + (prefix_word or "")
    return ("compute" if word else "count"), (word or ""), prefix, float(_PREFIXES[prefix_word or ""])


def parse_stated(text: str) -> Stated:
    """'17.5 GFLOPs' -> 17.5e9 FLOPs at a resolution of 0.1e9; '8-10 GB' -> a range; 'over 600 MB'
    -> a bound. The resolution follows :func:`digit_resolution` of the last number."""
    match = _TEXT.match(text.strip())
    if not match:
        raise ValueError(f"not a figure: {text!r}")
    kind, unit, prefix, scale = _unit(match["unit"], text)
    numbers = [match["a"]] + ([match["b"]] if match["b"] else [])
    values = [float(n.replace(",", "")) * scale for n in numbers]
    decimals, resolution = digit_resolution(numbers[-1])
    if match["space"] and kind == "bytes":
        unit = " " + unit
    elif match["space"] and prefix and not prefix.startswith(" "):
        prefix = " " + prefix
    return Stated(
        text=text, low=min(values), high=max(values), bound=_BOUNDS.get(match["bound"] or ""),
        scale=scale, prefix=prefix, unit=unit, kind=kind, decimals=decimals, resolution=resolution * scale,
    )


def format_like(stated: Stated, value: float, unit: str | None = None) -> str:
    """``value`` (base units) written the way ``stated`` is, with a little more precision: the
    inverse of :func:`parse_stated`, for comparing a recomputed value with the figure."""
    unit = stated.unit if unit is None else unit
    if stated.kind in ("count", "compute") and stated.scale == 1 and stated.decimals == 0:
        number = f"{round(value):,}" if float(value).is_integer() else f"{value:,.2f}"
        return number + (" " + unit.strip() if unit.strip() else "")
    shown = value / stated.scale
    decimals = stated.decimals + 1
    if shown:
        decimals = max(decimals, 2 - math.floor(math.log10(abs(shown))))
    decimals = min(max(decimals, 0), 6)
    if stated.kind == "ratio" and float(shown).is_integer():
        decimals = 0
    return f"{shown:,.{decimals}f}{stated.prefix}{unit}"


# --- a document's own arithmetic -------------------------------------------------------------------
_OPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Pow: operator.pow, ast.USub: operator.neg,
}


def _walk(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _walk(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_walk(node.left), _walk(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_walk(node.operand))
    raise ValueError("only numbers, + - * / ** and parentheses are allowed")


def evaluate_formula(text: str) -> float:
    """A document's arithmetic: numbers, + - * / ** and parentheses only."""
    try:
        return _walk(ast.parse(text, mode="eval"))
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression ({exc.msg})") from None


def formula_text(formula: str) -> str:
    """'12 * 197**2 * 4' -> '12 x 197^2 x 4'."""
    return formula.replace("**", "^").replace(" * ", " x ").replace("*", " x ")
