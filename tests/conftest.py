import os
import warnings

import pytest

os.environ.setdefault("CI", os.environ.get("CI", ""))
warnings.filterwarnings("ignore", category=FutureWarning, module="torch.jit")


def pytest_collection_modifyitems(config, items):
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except Exception:  # torch missing or broken: CUDA tests cannot run either
        has_cuda = False
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "cuda" in item.keywords and not has_cuda:
            item.add_marker(skip)
