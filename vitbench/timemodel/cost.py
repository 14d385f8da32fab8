"""What training costs, from one step's time.

    steps per epoch = ceil(dataset_size / batch_size)      (a last, partial batch is a full step)
    epoch_s         = steps per epoch x step_s
    train_hours     = epochs x epoch_s / 3600
    cost            = train_hours x price_per_hour
"""

from __future__ import annotations

import math


def training_cost(step_s: float, batch_size: int, epochs: float, dataset_size: int,
                  price_per_hour: float | None = None) -> dict[str, float | int | None]:
    steps = math.ceil(dataset_size / batch_size)
    epoch_s = steps * step_s
    hours = epochs * epoch_s / 3600
    return {"pred_steps_per_epoch": steps, "pred_epoch_s": epoch_s, "pred_train_hours": hours,
            "pred_cost": hours * price_per_hour if price_per_hour is not None else None}
