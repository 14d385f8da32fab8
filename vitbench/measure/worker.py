"""Entry module of a worker process (``python -m vitbench.measure.worker``): read one request
from stdin (see :mod:`vitbench.measure.isolate`), measure one run in this fresh process (the
memory cap, if any, set before the model's first allocation) and print ``MARKER <record>``."""

from __future__ import annotations

import json
import sys

from vitbench.errors import VitbenchError, error_detail
from vitbench.measure.isolate import MARKER
from vitbench.measure.record import failed_row
from vitbench.measure.single import measure_run
from vitbench.measure.target import from_request
from vitbench.row_status import RowStatus
from vitbench.settings import RunSettings


def main() -> int:
    request = json.loads(sys.stdin.read())
    target = from_request(request["model"])
    settings = RunSettings.from_dict(request["settings"])
    device = request["device"]
    try:
        record = measure_run(target, settings, device, request.get("detect_attention", True) is not False)
    except VitbenchError as exc:  # SpecError and the like: still one row
        record = failed_row(target, settings, device, RowStatus.ERROR, f"{exc.__class__.__name__}: {exc}")
    # the worker process's boundary: its one result is a row, whatever failed; vitbench's own
    # bug says so, its traceback in the row's error_detail for the parent (and VITBENCH_DEBUG)
    except Exception as exc:  # noqa: BLE001
        record = failed_row(target, settings, device, RowStatus.ERROR, f"internal error: {exc.__class__.__name__}: {exc}")
        record["error_detail"] = error_detail(exc)
    sys.stdout.write(MARKER + json.dumps(record, default=str) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
