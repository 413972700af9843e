"""Raw torch._dynamo.explain on a fixture's classes, in a fresh interpreter (a clean dynamo state), each
module built on the CPU as a user would: what fxlens's dynamo level is compared with. Prints JSON."""

import contextlib
import importlib.util
import json
import logging
import sys

import torch
import torch._dynamo

logging.getLogger("torch").setLevel(logging.CRITICAL)  # dynamo's W lines about each break
path, calls = sys.argv[1], json.loads(sys.argv[2])  # {class name: input shape}
spec = importlib.util.spec_from_file_location("raw_fixture", path)
module = importlib.util.module_from_spec(spec)
sys.modules["raw_fixture"] = module  # dynamo inlines a child's forward only from a registered module
spec.loader.exec_module(module)


def first_break(instance, x):
    """Where torch.compile(fullgraph=True) refuses the module: the first break, [line, col, gb_type]."""
    torch._dynamo.reset()
    try:
        torch.compile(instance, backend="eager", fullgraph=True)(x)
    except torch._dynamo.exc.Unsupported as error:
        frame = error.real_stack[-1]
        return [frame.lineno, frame.colno, error.gb_type]
    return None


result = {}
for name, shape in calls.items():
    torch._dynamo.reset()
    instance, x = getattr(module, name)(), torch.randn(*shape)
    with contextlib.redirect_stdout(sys.stderr):  # the module's own prints
        out = torch._dynamo.explain(instance)(x)
        fullgraph = first_break(instance, x)
    result[name] = {
        "graphs": out.graph_count,
        "graph_break_count": out.graph_break_count,
        "breaks": len(out.break_reasons),
        "at": [[r.user_stack[-1].lineno, r.user_stack[-1].colno] for r in out.break_reasons],
        "fullgraph": fullgraph,
        "nodes": [
            [
                [n.op, n._pretty_print_target(n.target) if n.op == "call_function" else str(n.target)]
                for n in g.graph.nodes
            ]
            for g in out.graphs
        ],
    }
print(json.dumps(result))
