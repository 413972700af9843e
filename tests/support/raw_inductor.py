"""Raw `torch.compile(m)(x)` with inductor's own debug trace, in a fresh interpreter: what fxlens's inductor
level is compared with. Kernels are built and run as torch builds them; nothing of fxlens is imported.

argv: JSON {class name: [fixture path, constructor expression, input shape]} (the expression is evaluated
in the fixture's namespace). The cache folder is TORCHINDUCTOR_CACHE_DIR as the caller set it.
Prints JSON: per class, per compiled graph (in order), what inductor wrote to its debug folder:
- "mappings": inductor_provenance_tracking_node_mappings.json as torch wrote it,
- "output_code": output_code.py,
- "pre_lines": each pre-grad (dynamo) node's line in the fixture, from the graph dynamo handed inductor.
"""

import contextlib
import importlib.util
import json
import os
import re
import sys
import tempfile

import torch
import torch._dynamo
from torch._inductor import config
from torch._inductor.compile_fx import compile_fx

calls = json.loads(sys.argv[1])
FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def load(path):
    name = f"raw_fixture_{len(sys.modules)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dynamo inlines a child's forward only from a registered module
    spec.loader.exec_module(module)
    return module


def line_of(stack_trace, path):
    mine = [m for m in FRAME.finditer(stack_trace or "") if os.path.abspath(m["file"]) == path]
    return int(mine[-1]["line"]) if mine else None


def compiled_graphs(instance, x, path):
    """Per graph inductor compiled for `instance(x)`, in compile order: its debug files and the lines in `path`
    of the pre-grad graph's nodes."""
    debug = tempfile.mkdtemp(prefix="raw-inductor-")
    pre_lines = []

    def inductor(gm, example_inputs):
        # the same call torch.compile's "inductor" backend makes; the pre-grad graph is noted on the way
        pre_lines.append({n.name: line_of(n.meta.get("stack_trace"), path) for n in gm.graph.nodes})
        return compile_fx(gm, example_inputs)

    with (
        config.patch(
            {
                "trace.enabled": True,
                "trace.provenance_tracking_level": 1,
                "fx_graph_cache": False,
                "trace.debug_dir": debug,
            }
        ),
        contextlib.redirect_stdout(sys.stderr),
    ):
        torch.compile(instance, backend=inductor)(x)
    graphs = []
    folder = os.path.join(debug, "torchinductor")
    # one folder per compiled graph, named for dynamo's frame and graph counters: in compile order
    for entry in sorted(os.listdir(folder), key=lambda n: os.path.getmtime(os.path.join(folder, n))):
        with open(os.path.join(folder, entry, "inductor_provenance_tracking_node_mappings.json")) as f:
            mappings = json.load(f)
        with open(os.path.join(folder, entry, "output_code.py")) as f:
            output_code = f.read()
        graphs.append({"mappings": mappings, "output_code": output_code})
    for graph, lines in zip(graphs, pre_lines):
        graph["pre_lines"] = lines
    return graphs


result = {}
modules = {}
for name, (path, expression, shape) in calls.items():
    path = os.path.abspath(path)
    if path not in modules:
        modules[path] = load(path)
    module = modules[path]
    torch._dynamo.reset()
    torch.manual_seed(0)
    instance = eval(expression, vars(module))
    result[name] = compiled_graphs(instance, torch.randn(*shape), path)
print(json.dumps(result))
