"""ATen op names as both sides read them (stdlib only: the worker and the server import it)."""

from __future__ import annotations

# ops that only re-index their input: inductor folds them into a kernel's indexing (a `reinterpret_tensor`
# of the input's buffer), so they are no work of their own
VIEW_OPS = frozenset(
    {
        "view",
        "reshape",
        "_unsafe_view",
        "_reshape_alias",
        "permute",
        "transpose",
        "t",
        "expand",
        "expand_as",
        "select",
        "slice",
        "narrow",
        "squeeze",
        "unsqueeze",
        "alias",
        "as_strided",
        "getitem",
        "unflatten",
        "flatten",
        "detach",
        "unbind",
        "split",
        "split_with_sizes",
        "chunk",
        "diagonal",
        "movedim",
        "swapaxes",
        "view_as_real",
        "view_as_complex",
    }
)


def packet(target: str) -> str:
    """`aten.addmm.default` -> `addmm` (the op, as torch names its overload packet; `prims.inductor_random.default`
    -> `inductor_random`), `operator.getitem` -> `getitem`, `getitem` -> `getitem`."""
    parts = target.split(".")
    return parts[1] if len(parts) == 3 or (parts[0] == "aten" and len(parts) > 1) else parts[-1]


def is_view(target: str) -> bool:
    return packet(target) in VIEW_OPS
