"""The fx level's limitations that hurt graph passes, as torch.fx's own limitations table lists them, found
in the graph symbolic_trace made: in-place updates of traced values (a pass that reorders, fuses or drops
nodes assumes none), a write through a view, and values tracing froze into constants (a forward parameter
left to its default, a tensor made from no traced value). The size-dependent specialisations of the aten
graph are specialise.py's."""

from __future__ import annotations

import ast
import operator
from collections.abc import Iterator
from typing import Any

import torch.fx as fx

from fxlens.report import Diagnostic, Node, Span
from fxlens.worker.failures.classify import whole_line
from fxlens.worker.levels.syntax import FileSyntax

IN_PLACE, VIEW_WRITE = "in-place", "write-through-view"
FROZEN_ARGUMENT, FROZEN_TENSOR = "frozen-argument", "frozen-tensor"
# Tensor methods whose result shares the storage of `self`
VIEWS = {
    "view",
    "view_as",
    "reshape",
    "narrow",
    "select",
    "transpose",
    "permute",
    "t",
    "expand",
    "expand_as",
    "unsqueeze",
    "squeeze",
    "flatten",
    "unflatten",
    "unfold",
    "diagonal",
    "as_strided",
    "chunk",
    "split",
    "unbind",
    "movedim",
    "swapaxes",
    "mT",
    "T",
    "real",
    "imag",
    "detach",
}
_AUGMENTED = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
}
_BINARY = {
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.floordiv,
    operator.mod,
    operator.pow,
    operator.matmul,
    operator.and_,
    operator.or_,
    operator.xor,
    operator.lshift,
    operator.rshift,
    operator.iadd,
    operator.isub,
    operator.imul,
    operator.itruediv,
    operator.ifloordiv,
    operator.imod,
    operator.ipow,
    operator.imatmul,
    operator.iand,
    operator.ior,
    operator.ixor,
    operator.ilshift,
    operator.irshift,
}
_WHY_IN_PLACE = (
    "torch.fx records the call as it is: passes assume a node only computes its output, so one that "
    "reorders, fuses or drops nodes (eliminate_dead_code drops an in-place node whose result is "
    "unused) changes what the mutated tensor holds for the nodes that read it later. aot_autograd "
    "functionalizes it; fx does not."
)


def _source(span: Node | None, lines: list[str]) -> str:
    if span is None or span.line is None or span.line != span.end_line or not 0 < span.line <= len(lines):
        return ""
    raw = lines[span.line - 1].encode()
    return raw[span.col : span.end_col].decode(errors="replace")


def _diagnostic(
    where: Node, lines: list[str], severity: str, category: str, message: str, why: str, fix: str
) -> Diagnostic:
    assert where.line is not None  # the nodes without a line are skipped before any diagnostic
    if where.col is not None and where.end_line is not None and where.end_col is not None:
        span = Span(where.line, where.col, where.end_line, where.end_col)
    else:
        span = whole_line(where.line, lines)
    return Diagnostic.at(span, severity, category, message, why, fix, level="fx")


def _is_view(node: Any) -> bool:
    return isinstance(node, fx.Node) and (
        (node.op == "call_method" and node.target in VIEWS)
        or (node.op == "call_function" and node.target is operator.getitem)
    )


def _in_place_method(node: fx.Node, where: Node, lines: list[str]) -> Diagnostic:
    method = str(node.target)
    expr = _source(where, lines)
    receiver, _, _ = expr.partition(f".{method}(")
    functional = expr.replace(f".{method}(", f".{method[:-1]}(", 1) if receiver else f"….{method[:-1]}(…)"
    if _is_view(node.args[0] if node.args else None):
        return _diagnostic(
            where,
            lines,
            "warning",
            VIEW_WRITE,
            f"`{expr or method}` writes through a view: the tensor it was taken from changes too",
            "A view shares its storage with the tensor it was taken from; the fx graph shows a "
            f"`{method}` of the view and nothing on that tensor, so a pass that moves or drops "
            f"nodes cannot see the write. " + _WHY_IN_PLACE,
            "Build the new value instead of writing into the old one: `torch.where`, "
            "`x.masked_fill(mask, v)`, `x.index_fill(dim, index, v)`, `torch.cat` of the parts, or "
            "`x = x.clone()` before the write.",
        )
    return _diagnostic(
        where,
        lines,
        "warning",
        IN_PLACE,
        f"`{expr or method}` updates a traced value in place",
        _WHY_IN_PLACE,
        f"Use the functional form: `{receiver} = {functional}`"
        if receiver
        else f"Use the functional form `{method[:-1]}` and assign its result.",
    )


def _augmented_assign(statement: ast.AugAssign, where: Node, lines: list[str]) -> Diagnostic:
    target, value = ast.unparse(statement.target), ast.unparse(statement.value)
    symbol = _AUGMENTED[type(statement.op)]
    return _diagnostic(
        where,
        lines,
        "warning",
        IN_PLACE,
        f"`{target} {symbol}= {value}` updates a traced tensor in place in eager PyTorch",
        f"torch.fx records it as a new value (`{target} {symbol} {value}`), but run eagerly the "
        f"tensor `{target}` names is changed in place, and with it every tensor that shares its "
        "storage (an input, a view, a buffer): the graph and the module disagree where it is "
        "aliased, and a pass proven on the graph does not hold for the module.",
        f"Use the functional form: `{target} = {target} {symbol} {value}`",
    )


def _inplace_flag(node: fx.Node, root: Any) -> bool:
    if node.op == "call_module":
        try:
            return getattr(root.get_submodule(str(node.target)), "inplace", False) is True
        except AttributeError:
            return False
    return node.op == "call_function" and node.kwargs.get("inplace") is True


def _inplace_layer(node: fx.Node, where: Node, lines: list[str]) -> Diagnostic:
    what = f"`{node.target}`" if node.op == "call_module" else f"`{getattr(node.target, '__name__', node.target)}`"
    return _diagnostic(
        where,
        lines,
        "warning",
        IN_PLACE,
        f"{what} runs with `inplace=True`: it overwrites its input",
        "An in-place activation writes its result into its input tensor; a pass that keeps that "
        "input alive (a residual, a fused pattern) reads the activated values. " + _WHY_IN_PLACE,
        "Construct it with `inplace=False` (the default): `nn.ReLU()`, `F.relu(x)`.",
    )


def _uses(tree: ast.AST, class_line: int, name: str) -> Iterator[tuple[ast.expr, bool]]:
    """In the traced class's forward: the `if`/`while`/conditional tests that read `name`, then its other reads."""
    cls = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.lineno == class_line), None)
    forward = next(
        (f for f in (cls.body if cls else []) if isinstance(f, ast.FunctionDef) and f.name == "forward"), None
    )
    if forward is None:
        return
    tests = [n.test for n in ast.walk(forward) if isinstance(n, (ast.If, ast.While, ast.IfExp))]
    for test in tests:
        if any(isinstance(x, ast.Name) and x.id == name for x in ast.walk(test)):
            yield test, True
    for read in ast.walk(forward):
        if isinstance(read, ast.Name) and read.id == name and isinstance(read.ctx, ast.Load):
            yield read, False


def _frozen_argument(
    name: str, value: Any, use: ast.expr, decided: bool, lines: list[str], class_name: str
) -> Diagnostic:
    # ast columns are UTF-8 byte offsets, as the report's are
    where = Node(
        name,
        "placeholder",
        name,
        0,
        line=use.lineno,
        col=use.col_offset,
        end_line=use.end_lineno,
        end_col=use.end_col_offset,
    )
    what = f"this test was decided for `{name}={value!r}`" if decided else f"the graph holds the constant `{value!r}`"
    return _diagnostic(
        where,
        lines,
        "information",
        FROZEN_ARGUMENT,
        f"`{name}` froze to its default {value!r} in the fx graph: {what}",
        "symbolic_trace was given it in `concrete_args` (the call leaves it to its default), so "
        "forward ran with that value: the graph has no input for it and holds for that value only.",
        f"To trace another value, pass it in the directive (`# fxlens: {class_name}(...)(x, "
        f"{name}=...)`) or call `torch.fx.symbolic_trace(m, concrete_args={{'{name}': ...}})`; to "
        "keep a call on it in the graph, move that code into a function registered with "
        "`torch.fx.wrap`; to make it data, pass a tensor and use `torch.where`.",
    )


def _frozen_tensor(node: fx.Node, where: Node, lines: list[str], value: Any) -> Diagnostic:
    shape = tuple(getattr(value, "shape", ()))
    expr = _source(where, lines)
    return _diagnostic(
        where,
        lines,
        "information",
        FROZEN_TENSOR,
        f"a tensor made from no traced value was baked in as the constant `{node.target}` "
        f"(shape {shape})" + (f", used in `{expr}`" if expr else ""),
        "Tracing records only operations on traced values; a tensor computed from constants "
        "(`torch.ones(4)`, `torch.randn(...)`, `torch.tensor([...])`) ran once while tracing, and "
        "its value is stored in the GraphModule: every call sees that same tensor (random "
        "values included) and a pass sees a constant, not an op.",
        "Register it in `__init__` (`self.register_buffer('name', torch.ones(4))`), or make it "
        "from a traced value (`x.new_ones(4)`, `torch.ones_like(...)`) so it stays an op; "
        "`torch.fx.wrap` a helper that makes it to keep the call in the graph.",
    )


def limitation_diagnostics(
    gm: fx.GraphModule, nodes: list[Node], lines: list[str], class_line: int, class_name: str, syntax: FileSyntax
) -> list[Diagnostic]:
    by_name = {n.name: n for n in nodes}
    flagged: set[int] = set()  # one warning per augmented statement (a child called in it adds too)
    found: list[Diagnostic] = []
    for node in gm.graph.nodes:
        where = by_name.get(node.name)
        if where is None or where.line is None:
            continue
        # a child's code traced through shows at its call site: each construct is told where its text is
        expr = _source(where, lines)
        if (
            node.op == "call_method"
            and str(node.target).endswith("_")
            and not str(node.target).startswith("_")
            and f".{node.target}(" in expr
        ):
            found.append(_in_place_method(node, where, lines))
        elif _inplace_flag(node, gm) and (
            ("inplace" in expr) if node.op == "call_function" else f"{str(node.target).split('.')[-1]}(" in expr
        ):
            found.append(_inplace_layer(node, where, lines))
        elif node.op == "call_function" and node.target in _BINARY:
            statement = next(
                (
                    s
                    for s in syntax.augmented.get(where.line, [])
                    if s.col_offset <= (where.col or 0) < (s.end_col_offset or 0) and id(s) not in flagged
                ),
                None,
            )
            if statement is not None and expr.replace(" ", "") == ast.unparse(statement).replace(" ", ""):
                flagged.add(id(statement))
                found.append(_augmented_assign(statement, where, lines))
        elif node.op == "get_attr" and str(node.target).startswith("_tensor_constant") and where.scope == "":
            found.append(_frozen_tensor(node, where, lines, getattr(gm, str(node.target), None)))
    for name, value in (gm.meta.get("fxlens_concrete") or {}).items():
        use, decided = next(_uses(syntax.tree, class_line, name), (None, False))
        if use is not None:
            found.append(_frozen_argument(name, value, use, decided, lines, class_name))
    return found
