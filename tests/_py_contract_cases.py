"""Files for the bad-input corpus's block on issue 33's ``py:`` contract, limits before tracing
and values from arguments and sweep files (tests/data/bad_inputs.yaml): sweep files whose values
the run refuses, so the dry run must refuse them too."""

from __future__ import annotations

from pathlib import Path

SWEEP_FILES = {
    "sw_big_batch": ("big_batch.yaml", "models: [mnist-vit]\nbatch_sizes: [100000000000000000000000]\n"),
    "sw_inf_timeout": ("inf_timeout.yaml", "models: [mnist-vit]\nstages: [measured]\nmeasure: {timeout_s: .inf}\n"),
    "sw_huge_warmup": ("huge_warmup.yaml", "models: [mnist-vit]\nstages: [measured]\nmeasure: {warmup: 100000000000000000000000}\n"),
    "sw_huge_min_time": ("huge_min_time.yaml", "models: [mnist-vit]\nstages: [measured]\nmeasure: {min_run_time_s: 1e308}\n"),
    "sw_date_grid": ("date_grid.toml", 'models = ["mnist-vit"]\n[grid]\ndepth = [1979-05-27]\n'),
    "sw_date_name": ("date_name.toml", 'models = ["mnist-vit"]\nname = 1979-05-27\n'),
    "sw_huge_img": ("huge_img.yaml", "models: [mnist-vit]\ngrid: {img_size: [" + "1" + "0" * 5000 + "]}\n"),
    "sw_huge_img_toml": ("huge_img.toml", 'models = ["mnist-vit"]\n[grid]\nimg_size = [1' + "0" * 5000 + "]\n"),
    "sw_py_os": ("py_os.yaml", 'models: ["py:os:popen+cmd=true"]\n'),
    "sw_py_shutil": ("py_shutil.toml", 'models = ["py:shutil:rmtree+path=/tmp"]\n'),
}


#: factories whose model's own forward fails (a user's error, exit 2, not an internal one)
BROKEN_FACTORY = (
    "import torch\n\n"
    "class Raises(torch.nn.Module):\n"
    "    def forward(self, x):\n"
    "        raise ValueError('boom')\n\n"
    "def shapes():\n"
    "    return torch.nn.Linear(1, 1)\n\n"
    "def raises():\n"
    "    return Raises()\n"
)


#: issue 45: a user file that re-exports a library's function, and the user's own factory (which
#: must not be imported when a later model of the command is refused)
REEXPORT = "from sympy import sympify as f\n"
MINE = "from torch import nn\n\ndef build(img_size=8):\n    return nn.Conv2d(3, 3, 3)\n"


def prepare(root: Path) -> dict[str, str]:
    (root / "py_broken_forward.py").write_text(BROKEN_FACTORY)
    (root / "py_reexport_sympify.py").write_text(REEXPORT)
    (root / "py_mine.py").write_text(MINE)
    out = {"py_broken": str(root / "py_broken_forward.py"), "py_reexport": str(root / "py_reexport_sympify.py"),
           "py_mine": str(root / "py_mine.py")}
    for key, (name, text) in SWEEP_FILES.items():
        (root / name).write_text(text)
        out[key] = str(root / name)
    return out
