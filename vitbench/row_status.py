"""What became of one configuration: a result row's ``status`` column, a closed set.

A member is its text (``str`` mix-in): it equals, hashes, formats and serialises (JSON, CSV,
Parquet, markdown) as the text files have always held (``RowStatus.OK == "ok"``), so a row read
back from a file, whose status is plain text, compares equal to the member that wrote it."""

from __future__ import annotations

from enum import Enum
from typing import Any


class RowStatus(str, Enum):
    """A row's status (``Row.status``): ``ok`` (the row has its result), ``error`` (the model's
    step failed), ``oom`` (out of memory), ``refused`` (a number vitbench cannot stand behind:
    too large to trace, a model that cannot run on fake tensors), ``invalid`` (the configuration
    itself, a sweep's). Every status but ``ok`` comes with the row's ``error`` (one line: why). A
    member is its text: ``RowStatus.OOM == "oom"``, ``f"{RowStatus.OOM}" == "oom"``."""

    OK = "ok"              # the row has its result
    ERROR = "error"        # the model's step failed (its exception in ``error``; vitbench's own: "internal error")
    OOM = "oom"            # the step ran out of memory (device or host)
    REFUSED = "refused"    # vitbench declined to give a number it cannot stand behind (too large, untraceable)
    INVALID = "invalid"    # the configuration itself is invalid (a sweep file's value, found when it is expanded)

    # the text wherever it is shown: str(), format(), f-strings and % give "ok", never "RowStatus.OK"
    # (what enum.StrEnum does from Python 3.11; 3.12 made format() follow str())
    __str__ = str.__str__
    __format__ = str.__format__


#: statuses of a step that failed when it ran: ``vitbench sweep --resume --retry-failed`` runs them
#: again, and a sweep with any ends with exit code 1
FAILED = (RowStatus.ERROR, RowStatus.OOM)


def has_result(record: Any) -> bool:
    """Whether a row has its result: status ok, or none given (an analysis, a hand-made file)."""
    return record.get("status", RowStatus.OK) in (RowStatus.OK, None)
