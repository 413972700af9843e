"""A model whose folder holds a Python file fxlens cannot read (a dangling link, as a moved checkout or an
editor's lock file leaves) traces as if that file were not there: reading the package's other files for calls
that build the class used to fail the class on that file, and `fxlens check` of the folder stopped with a
FileNotFoundError traceback."""

from __future__ import annotations

from fxlens_command import fxlens
from torch_reference import analyse

MODEL = """import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return torch.relu(self.fc(x))
"""


def test_a_dangling_link_beside_the_model_is_skipped(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "moved_away.py").symlink_to(tmp_path / "no-such-file.py")
    report = analyse([tmp_path / "model.py"])["model"]
    assert not [d for d in report.all_diagnostics() if d.category == "internal"]
    mlp = report.find_class("Mlp")
    assert mlp.levels["fx"].ok and mlp.levels["aten"].ok
    assert [n.target for n in mlp.levels["fx"].nodes] == ["x", "fc", "torch.relu", "output"]


def test_fxlens_check_of_a_folder_skips_a_dangling_link(tmp_path):
    (tmp_path / "model.py").write_text(MODEL.replace("def __init__(self, width):", "def __init__(self, width=8):"))
    (tmp_path / "moved_away.py").symlink_to(tmp_path / "no-such-file.py")
    run = fxlens("check", "--no-cache", "--level", "fx", str(tmp_path), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stderr.strip().splitlines()[-1] == "1 file(s) checked, 0 error(s)"
