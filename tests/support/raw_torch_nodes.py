"""Raw torch on a module imported the ordinary way: `python raw_torch_nodes.py '<json>'` prints the fx
(symbolic_trace + ShapeProp) and aten (torch.export, non-strict) rows of one class (bench/torch_nodes.py,
the rows every other test compares with), built and called as the `# fxlens:` directive above it says,
on the meta device.

It runs in its own interpreter so that the package is imported exactly as a user's `python -m` would:
the request's `paths` first on sys.path, nothing of fxlens loaded. Request: {"paths": [...],
"module": "pkg.model", "class": "Net"}.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _example(module, class_name):
    import torch

    path = module.__file__
    text = open(path, encoding="utf-8").read()
    match = re.search(rf"# fxlens: (.*)\n(?:[#@].*\n)*class {class_name}\b", text)
    call = ast.parse(match.group(1), mode="eval").body
    evaluate = lambda node: eval(compile(ast.Expression(node), path, "eval"), vars(module))  # noqa: E731
    with torch.device("meta"):
        return evaluate(call.func), tuple(evaluate(arg) for arg in call.args)


def main() -> None:
    request = json.loads(sys.argv[1])
    sys.path[:0] = request["paths"]
    module = importlib.import_module(request["module"])
    sys.path.append(str(BENCH))  # after the user's paths: their modules win, as they would for the user
    import torch
    from torch_nodes import export_rows, fx_rows

    instance, inputs = _example(module, request["class"])
    path = module.__file__
    program = torch.export.export(instance, inputs, strict=False)
    print(
        json.dumps(
            {
                "file": path,
                "fx": [list(row) for row in fx_rows(instance, inputs, path)],
                "aten": [list(row) for row in export_rows(program, path)],
            }
        )
    )


if __name__ == "__main__":
    main()
