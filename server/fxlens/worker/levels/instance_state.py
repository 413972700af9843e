"""Running user code leaves the instances as they were built.

A forward may assign to its module (`self.attn_mask = self.attn_mask.to(x.dtype)` in CLIP, caches in
rotary embeddings): under symbolic_trace the value stored is a Proxy of a finished trace, under export a
fake tensor of a finished mode, and the next step (guessing inputs, recording children, the other level)
would run on it. Every step that runs forward starts from the state the constructor made.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy

_TABLES = ("_parameters", "_buffers", "_modules")
# what a lazy module's first forward changes beyond its attributes: the hooks that infer its sizes remove
# themselves, the module becomes its `cls_to_become`, its tensors are materialised in place
_LAZY_HOOKS = ("_forward_pre_hooks", "_load_state_dict_pre_hooks")


class _Unmaterialised:
    """A lazy module (`nn.LazyLinear`) whose parameters have no shape yet, as it was."""

    def __init__(self, module: nn.Module) -> None:
        self.module, self.cls = module, type(module)
        self.hooks = {name: dict(getattr(module, name)) for name in _LAZY_HOOKS}
        tensors = [t for t in (*module._parameters.values(), *module._buffers.values()) if t is not None]
        self.tensors = [(t, t.device, t.dtype) for t in tensors if is_lazy(t)]

    @property
    def materialised(self) -> bool:
        return type(self.module) is not self.cls

    def undo(self) -> None:
        """Uninitialised again: the next run infers its sizes from its own inputs."""
        self.module.__class__ = self.cls
        for name, hooks in self.hooks.items():
            table = getattr(self.module, name)
            table.clear()
            table.update(hooks)
        for tensor, device, dtype in self.tensors:
            if not is_lazy(tensor):
                tensor.data = torch.empty(0, device=device, dtype=dtype)
                tensor.__class__ = UninitializedParameter if isinstance(tensor, nn.Parameter) else UninitializedBuffer


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
        self.lazy = [
            _Unmaterialised(sub)
            for sub in module.modules()
            if isinstance(sub, LazyModuleMixin) and sub.has_uninitialized_params()
        ]

    def restore(self, keep_added: bool = False, keep_materialised: bool = False) -> None:
        """Every value as it was; with `keep_added`, names assigned since stay (symbolic_trace stores the
        constants its graph reads on the root, `_tensor_constant0`, for the GraphModule to copy). A lazy
        module its run materialised is uninitialised again, or with `keep_materialised` left as it is now."""
        kept = {id(lazy.module) for lazy in self.lazy if keep_materialised and lazy.materialised}
        for lazy in self.lazy:
            if lazy.materialised and not keep_materialised:
                lazy.undo()
        for sub, attributes, tables in self.saved:
            if id(sub) in kept:
                continue
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
