"""Running user code leaves the instances as they were built.

A forward may assign to its module (`self.attn_mask = self.attn_mask.to(x.dtype)` in CLIP, caches in
rotary embeddings): under symbolic_trace the value stored is a Proxy of a finished trace, under export a
fake tensor of a finished mode, and the next step (guessing inputs, recording children, the other level)
would run on it. Every step that runs forward starts from the state the constructor made.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from torch import nn

_TABLES = ("_parameters", "_buffers", "_modules")


class Snapshot:
    """The attributes, parameters, buffers and children of a module and its submodules at one moment
    (one shallow copy per submodule: cheap on an 80-layer model)."""

    def __init__(self, module: nn.Module) -> None:
        self.saved = [
            (
                sub,
                dict(sub.__dict__),
                {name: dict(sub.__dict__[name]) for name in _TABLES if isinstance(sub.__dict__.get(name), dict)},
            )
            for sub in module.modules()
        ]

    def restore(self, keep_added: bool = False) -> None:
        """Every value as it was; with `keep_added`, names assigned since stay (symbolic_trace stores the
        constants its graph reads on the root, `_tensor_constant0`, for the GraphModule to copy)."""
        for sub, attributes, tables in self.saved:
            added = {k: v for k, v in sub.__dict__.items() if k not in attributes} if keep_added else {}
            sub.__dict__.clear()
            sub.__dict__.update(attributes)
            sub.__dict__.update(added)
            for name, contents in tables.items():  # the same dict objects, their contents as they were
                table = sub.__dict__[name]
                extra = {k: v for k, v in table.items() if k not in contents} if keep_added else {}
                table.clear()
                table.update(contents)
                table.update(extra)


@contextmanager
def kept(module: nn.Module) -> Iterator[None]:
    """Undo, on leaving, every assignment the code run inside made to `module` and its submodules."""
    snapshot = Snapshot(module)
    try:
        yield
    finally:
        snapshot.restore()
