"""Prices of an hour of a device, per device: what ``--price-per-hour`` (``predict``), ``--price``
(``choose``) and a price file give. Pure Python (no torch).

vitbench ships no prices (they change by the week and by provider); users give theirs:

- one number for every device asked (``2.5``),
- per device (``h100=2.5,a100=1.3``; any ``--device`` spelling, an alias too), or a mapping
  ``{"h100": 2.5}`` in Python,
- a TOML file kept by the user (``docs/prices.example.toml`` shows the form)::

      [prices]          # one hour of one card, in the file's currency
      h100 = 2.5
      a100 = 1.3

  A file may price more devices than a command asks for (one file for every card one rents);
  a price on the command line overrides the file's for its device.

Refused, in one line naming the field and the value (exit code 2): a device that is not in the
catalogue, a price on the command line for a device not asked for, a price that is not a
positive number (negative, zero, text, infinity), the same device twice, and a file that is
not TOML of that form.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from vitbench.errors import InputFileError, SpecError
from vitbench.input_files import read_input_text
from vitbench.timemodel.gpus import GPU_DEVICES, gpu

#: the largest price of an hour (a cost no float holds is a typo)
MAX_PRICE = 10**9
#: a price file's size cap (a price list is a few hundred bytes)
MAX_PRICE_FILE_BYTES = 64 * 1024


def _device_key(name: Any, field: str) -> str:
    """The catalogue key of a device named in a price list; SpecError naming ``field``."""
    text = name.strip().lower() if isinstance(name, str) else None
    if text in ("cpu", "cuda"):
        return text
    spec = gpu(text) if text else None
    if spec is None:
        raise SpecError(field, name, f"unknown device; known: cpu, cuda, {', '.join(GPU_DEVICES)}")
    return spec.key


def check_price(field: str, value: Any) -> float:
    """``value`` as a price: a positive finite number up to :data:`MAX_PRICE`; text is read as
    a decimal number (digits 0-9). SpecError naming ``field`` otherwise."""
    number = value
    if isinstance(value, str):
        text = value.strip()
        if not text.isascii() or "_" in text:
            raise SpecError(field, value, "must be a positive number written with the digits 0-9")
        try:
            number = float(text)
        except ValueError:
            raise SpecError(field, value, "must be a positive number (a price of one hour)") from None
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        raise SpecError(field, value, "must be a positive number (a price of one hour)")
    if not number > 0 or number != number or number == float("inf"):
        raise SpecError(field, number, "must be a positive number (a price of one hour)")
    if number > MAX_PRICE:
        raise SpecError(field, number, f"must be at most {MAX_PRICE:,}")
    return float(number)


def parse_price_list(text: str, field: str = "price_per_hour") -> float | dict[str, float]:
    """``'2.5'`` -> 2.5 (every device); ``'h100=2.5,a100=1.3'`` -> {'h100': 2.5, 'a100': 1.3}."""
    if not isinstance(text, str) or not text.strip():
        raise SpecError(field, text, "needs a price (2.5) or prices per device (h100=2.5,a100=1.3)")
    if "=" not in text:
        if "," in text:
            raise SpecError(field, text, "several prices need the device of each: DEVICE=PRICE,... (e.g. h100=2.5,a100=1.3)")
        return check_price(field, text)
    prices: dict[str, float] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise SpecError(field, part.strip(), "each entry must be DEVICE=PRICE, e.g. h100=2.5")
        key = _device_key(name, field)
        if key in prices:
            raise SpecError(field, name.strip(), "is priced twice")
        prices[key] = check_price(f"{field}[{name.strip()}]", value)
    return prices


def load_price_file(path: str | os.PathLike) -> dict[str, float]:
    """The ``[prices]`` table of a TOML price file, keyed by catalogue device. Other tables
    (``[source]``: the date, the provider) are the file's own notes and are not read."""
    where = f"prices={str(path)!r}"
    text = read_input_text(path, where, max_bytes=MAX_PRICE_FILE_BYTES)
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError) as exc:
        raise InputFileError(f"{where}: invalid TOML: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    table = data.get("prices")
    if not isinstance(table, dict) or not table:
        raise InputFileError(f"{where}: needs a [prices] table of DEVICE = PRICE (one hour of one card), e.g. h100 = 2.5")
    prices: dict[str, float] = {}
    for name, value in table.items():
        key = _device_key(name, f"prices[{name}]")
        if key in prices:
            raise SpecError(f"prices[{name}]", value, f"{key} is priced twice in the file")
        prices[key] = check_price(f"prices[{name}]", value)
    return prices


def device_prices(price: Any, devices: Iterable[str], prices_file: str | os.PathLike | None = None,
                  field: str = "price_per_hour") -> dict[str, float]:
    """Each asked device's price of an hour (devices without one are absent: empty when no
    price is given at all). ``price``: None, a number (every device), text (see
    :func:`parse_price_list`) or a mapping device -> price; ``prices_file``: a TOML price file,
    which ``price`` overrides device by device. A price given here for a device not in
    ``devices`` is refused (a typo would otherwise price nothing)."""
    devices = list(devices)
    found: dict[str, float] = {}
    if prices_file is not None:
        from_file = load_price_file(prices_file)
        found.update({device: value for device, value in from_file.items() if device in devices})
    if price is None:
        return found
    if isinstance(price, str):
        price = parse_price_list(price, field)
    if isinstance(price, Mapping):
        given: dict[str, float] = {}
        for name, value in price.items():
            key = _device_key(name, field)
            if key in given:
                raise SpecError(field, name, "is priced twice")
            given[key] = check_price(f"{field}[{name}]", value)
        for key in given:
            if key not in devices:
                raise SpecError(field, key, f"is priced but not asked for (devices: {', '.join(devices)})")
        return {**found, **given}
    value = check_price(field, price)
    return dict.fromkeys(devices, value)


__all__ = ["MAX_PRICE", "MAX_PRICE_FILE_BYTES", "check_price", "device_prices", "load_price_file", "parse_price_list"]
