"""Raw torch.compile on a fixture's classes, in a fresh interpreter, with torch's own guard log on (the
`guards` artifact: the tree of checks of every frame dynamo compiles, as torch prints it). What fxlens's
guards are compared with. Prints JSON: per class, one list of `[kind, code]` lines per compiled frame; for a
class whose call says `grown` (its input at another size), how many times torch.compile compiled its forward
again for that size (the cache entries on forward's code, less one), as compiled and with dynamic=True."""

import importlib.util
import json
import logging
import sys

import torch
import torch._dynamo
import torch._logging
from torch._dynamo.eval_frame import _debug_get_cache_entry_list

path, calls = sys.argv[1], json.loads(sys.argv[2])  # {class: {"args": [[4, 16], 2], "device": "meta"}}
spec = importlib.util.spec_from_file_location("raw_fixture", path)
module = importlib.util.module_from_spec(spec)
sys.modules["raw_fixture"] = module
spec.loader.exec_module(module)


class Trees(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.trees: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "TREE_GUARD_MANAGER" in message:
            self.trees.append(message)


def leaves(tree: str) -> list[list[str]]:
    """`+- KIND: code  # where` lines (a relational guard printed again is its bare name: skipped)."""
    found = []
    for line in tree.splitlines():
        text = line.lstrip("| ").removeprefix("+- ")
        kind, colon, code = text.partition(": ")
        if colon and kind.isupper() and not kind.startswith("TREE"):
            found.append([kind, code.split("  #")[0].rstrip()])
    return found


torch._logging.set_logs(guards=True)
trees = Trees()
logging.getLogger("torch._dynamo.guards.__guards").addHandler(trees)
logging.getLogger("torch._dynamo.guards.__guards").propagate = False
result = {}
for name, call in calls.items():
    torch._dynamo.reset()
    trees.trees.clear()
    built = eval(call["build"], vars(module))  # the fixture's own directive
    args = [torch.randn(*a) if isinstance(a, list) else a for a in call["args"]]
    built = built.to(call["device"])
    args = [a.to(call["device"]) if isinstance(a, torch.Tensor) else a for a in args]
    torch.compile(built, backend="eager")(*args)
    result[name] = {"trees": [leaves(tree) for tree in trees.trees]}
    if "grown" in call:
        grown = [torch.randn(*a) if isinstance(a, list) else a for a in call["grown"]]
        for how, options in (("static", {}), ("dynamic", {"dynamic": True})):
            torch._dynamo.reset()
            compiled = torch.compile(eval(call["build"], vars(module)), backend="eager", **options)  # on the CPU
            compiled(*[torch.randn(*a) if isinstance(a, list) else a for a in call["args"]])
            compiled(*grown)
            result[name][how] = len(_debug_get_cache_entry_list(type(built).forward)) - 1
print(json.dumps(result))
