"""Raw torch on a module imported the ordinary way: `python raw_torch_nodes.py '<json>'` prints the fx
(symbolic_trace + ShapeProp) and aten (torch.export, non-strict) nodes of one class, built and called
as the `# fxlens:` directive above it says, on the meta device.

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


def _innermost_line(stack_trace, path):
    lines = [int(m.group(1)) for m in re.finditer(rf'File "{re.escape(path)}", line (\d+)', stack_trace or "")]
    return lines[-1] if lines else None


def _shape(value):
    import torch

    return [int(s) for s in value.shape] if isinstance(value, torch.Tensor) else None


def _example(module, class_name):
    import torch

    path = module.__file__
    text = open(path, encoding="utf-8").read()
    match = re.search(rf"# fxlens: (.*)\n(?:[#@].*\n)*class {class_name}\b", text)
    call = ast.parse(match.group(1), mode="eval").body
    evaluate = lambda node: eval(compile(ast.Expression(node), path, "eval"), vars(module))  # noqa: E731
    with torch.device("meta"):
        return evaluate(call.func), tuple(evaluate(arg) for arg in call.args)


def fx_nodes(instance, inputs, path):
    import torch.fx
    from torch.fx.passes.shape_prop import ShapeProp

    tracer = torch.fx.Tracer()
    tracer.record_stack_traces = True
    gm = torch.fx.GraphModule(instance, tracer.trace(instance))
    ShapeProp(gm).propagate(*inputs)
    return [[n.name, n.op, str(n.target) if n.op != "call_function" else n._pretty_print_target(n.target),
             len(n.users), _innermost_line(n.stack_trace, path),
             list(n.meta["tensor_meta"].shape) if hasattr(n.meta.get("tensor_meta"), "shape") else None]
            for n in gm.graph.nodes]


def aten_nodes(instance, inputs, path):
    import torch

    ep = torch.export.export(instance, inputs, strict=False)
    return [[n.name, n.op, str(n.target) if isinstance(n.target, torch._ops.OpOverload)
             else n._pretty_print_target(n.target), len(n.users),
             _innermost_line(n.meta.get("stack_trace"), path) if n.op not in ("placeholder", "output") else None,
             _shape(n.meta.get("val"))]
            for n in ep.graph.nodes]


def main() -> None:
    request = json.loads(sys.argv[1])
    sys.path[:0] = request["paths"]
    module = importlib.import_module(request["module"])
    instance, inputs = _example(module, request["class"])
    print(json.dumps({"file": module.__file__, "fx": fx_nodes(instance, inputs, module.__file__),
                      "aten": aten_nodes(instance, inputs, module.__file__)}))


if __name__ == "__main__":
    main()
