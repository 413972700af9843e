"""Inductor's kernels as report nodes, tied to the user's lines through inductor's own provenance.

The chain is inductor's (`config.trace.provenance_tracking_level = 1`, what tlparse's provenance view reads):
kernel -> the post-grad nodes it computes (`cppCodeToPost`, Triton kernels too) -> the pre-grad nodes they
come from (`postToPre`: dynamo's graph) -> their stack traces, whose innermost frame in the user's file is
the line. Where a pre-grad node has no stack trace, the post-grad node's own stack trace is read.

A kernel is one of three kinds:
- `fused`: code inductor generated (`cpp_fused_add_mul_relu_sigmoid_0`, `triton_poi_fused_relu_0`), one or
  many ops fused into one loop nest;
- `extern`: a library call (`extern_kernels.addmm`, `extern_kernels.bmm`: the BLAS / oneDNN kernel);
- `fallback`: an op inductor has no lowering for, run as the ATen op itself
  (`torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default`).

Torch-free: it reads the plain data inductor_capture.py collected.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from fxlens.ops import is_view
from fxlens.report import Node
from fxlens.worker.failures.classify import whole_line

_DEFINITION = re.compile(r"^(?P<name>\w+) = async_compile\.\w+\(", re.MULTILINE)
_HANDLE = "# [Provenance debug handles] "
_ORIGINS = re.compile(
    r"#\s*(?:Topologically Sorted|Unsorted) Source Nodes: \[(?P<source>[^\]]*)\], "
    r"Original ATen: \[(?P<aten>[^\]]*)\]"
)

# a stack trace -> (function, line) of its innermost frame in the user's file, or None
Locate = Callable[[str], tuple[str, int] | None]


@dataclass
class Compiled:
    """One graph inductor compiled: its wrapper module's source and how its kernels map to the graphs."""

    code: str = ""
    # inductor's own provenance json: preToPost, postToPre, cppCodeToPost (kernel "name:handle" -> post-grad
    # node names; Triton's kernels too, under this name), postToCppCode
    mappings: dict = field(default_factory=dict)
    # the post-grad graph's computing nodes, in order: name -> {"target", "inputs", "stack_trace"}
    post: dict = field(default_factory=dict)
    # the pre-grad graph's nodes (dynamo's) that have a stack trace: name -> {"stack_trace"}
    pre: dict = field(default_factory=dict)
    # kernel "name:handle" -> the kind of a kernel that is not generated code: "extern" (a library call,
    # inductor's ExternKernel) or "fallback" (its FallbackKernel: an op it has no lowering for)
    extern: dict = field(default_factory=dict)
    # kernel "name:handle" -> the stack traces inductor gathered for it
    stack_traces: dict = field(default_factory=dict)
    device: str = "cpu"


def kernel_name(key: str) -> str:
    """`cpp_fused_relu_0:2` -> `cpp_fused_relu_0` (the debug handle after the colon numbers the calls)."""
    name, sep, handle = key.rpartition(":")
    return name if sep and handle.isdigit() else key


def kind_of(key: str, extern: dict) -> str:
    """`fused`, `extern` or `fallback`: as inductor's IR said it (`extern`), else by the kernel's name."""
    if key in extern:
        return extern[key]
    name = kernel_name(key)
    if name.startswith("extern_kernels."):
        return "extern"
    if name.startswith(("cpp_", "triton_")):
        return "fused"
    return "fallback"


def _handle(key: str) -> int:
    tail = key.rpartition(":")[2]
    return int(tail) if tail.isdigit() else 0


@dataclass
class _Code:
    """Where a kernel is in the wrapper: its source, the line it starts at, the call and torch's comment."""

    source: str = ""
    line: int | None = None  # 1-based, in the wrapper
    call: str = ""
    source_nodes: list[str] = field(default_factory=list)
    original_aten: list[str] = field(default_factory=list)


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _definitions(code: str) -> dict[str, tuple[str, int]]:
    """Generated kernel name -> (its source, the 1-based wrapper line its definition starts at)."""
    found = {}
    for match in _DEFINITION.finditer(code):
        opening = code.find("'''", match.end())
        closing = code.find("'''", opening + 3) if opening >= 0 else -1
        if closing < 0:
            continue
        source = code[opening + 3 : closing].strip("\n")
        found[match.group("name")] = (source, code.count("\n", 0, match.start()) + 1)
    return found


def _calls(code: str) -> dict[str, _Code]:
    """Kernel key -> the wrapper line calling it (after its `[Provenance debug handles]` comment) and
    torch's `Source Nodes / Original ATen` comment above that, where torch wrote one."""
    lines = code.split("\n")
    found = {}
    for index, text in enumerate(lines):
        stripped = text.strip()
        if not stripped.startswith(_HANDLE):
            continue
        key = stripped[len(_HANDLE) :].strip()
        call_index = next(
            (i for i in range(index + 1, len(lines)) if lines[i].strip() and not lines[i].strip().startswith("#")), None
        )
        entry = _Code(
            call=lines[call_index].strip() if call_index is not None else "",
            line=call_index + 1 if call_index is not None else None,
        )
        above = index - 1
        while above >= 0 and lines[above].strip().startswith("#"):
            origins = _ORIGINS.search(lines[above])
            if origins:
                entry.source_nodes, entry.original_aten = _items(origins["source"]), _items(origins["aten"])
                break
            above -= 1
        found[key] = entry
    return found


def _producers(name: str, post: dict, kernels_of: dict[str, list[str]], memo: dict[str, list[str]]) -> list[str]:
    """The kernels that compute post-grad node `name`, or, for a node no kernel computes (a view becomes a
    `reinterpret_tensor` of its input's buffer), those computing its inputs."""
    if name in memo:
        return memo[name]
    memo[name] = []  # (a cycle cannot occur in a graph; this only guards the recursion)
    if name in kernels_of:
        found = list(kernels_of[name])
    else:
        found = list(
            dict.fromkeys(
                k for i in post.get(name, {}).get("inputs", []) for k in _producers(i, post, kernels_of, memo)
            )
        )
    memo[name] = found
    return found


def _post_node(
    name: str, compiled: Compiled, to_pre: dict[str, list[str]], order: dict[str, int], locate: Locate
) -> dict:
    """One post-grad node a kernel computes: its op, the pre-grad nodes it comes from, its line (through the
    pre-grad nodes' stack traces, else its own) and its position in the post-grad graph."""
    pre = list(to_pre.get(name, []))
    traces = [compiled.pre.get(p, {}).get("stack_trace", "") for p in pre]
    traces.append(compiled.post.get(name, {}).get("stack_trace", ""))
    where = next((w for w in (_where(t, locate) for t in traces) if w), None)
    return {
        "name": name,
        "target": compiled.post.get(name, {}).get("target", name),
        "pre": pre,
        "line": where[1] if where else None,
        "function": where[0] if where else None,
        "at": order.get(name),
    }


def _where(trace: str, locate: Locate) -> tuple[str, int] | None:
    return locate(trace) if trace else None


def kernels_of(
    compiled: Compiled, graph: int, graphs: int, locate: Locate, lines: list[str], code_offset: int = 0
) -> list[Node]:
    """One graph's kernels, in the order the wrapper calls them."""
    to_post: dict[str, list[str]] = compiled.mappings.get("cppCodeToPost") or {}
    to_pre: dict[str, list[str]] = compiled.mappings.get("postToPre") or {}
    order = {name: index for index, name in enumerate(compiled.post)}
    definitions, calls = _definitions(compiled.code), _calls(compiled.code)
    keys = sorted(to_post, key=_handle)
    suffix = f"/g{graph}" if graph else ""
    producing: dict[str, list[str]] = {}
    for key in keys:
        for name in to_post[key]:
            producing.setdefault(name, []).append(key + suffix)
    memo: dict[str, list[str]] = {}
    nodes: list[Node] = []
    for key in keys:
        post = [
            _post_node(name, compiled, to_pre, order, locate)
            for name in sorted(dict.fromkeys(to_post[key]), key=lambda n: order.get(n, len(order)))
        ]
        placed = [p for p in post if p["line"] is not None]
        if not placed:  # inductor's own gathering, e.g. for a kernel whose nodes lost their stack traces
            where = next((w for w in (_where(t, locate) for t in compiled.stack_traces.get(key, [])) if w), None)
            placed = [{"line": where[1], "function": where[0], "target": ""}] if where else []
        name = kernel_name(key)
        call = calls.get(key, _Code())
        source, code_line = definitions.get(name, (call.call, call.line))
        node = Node(
            name=key + suffix, op="call_function", target=name, num_users=0, text=call.call or name, graph=graph
        )
        # listed at its first op that computes (not a view folded into its indexing): sdpa's kernel at the
        # attention call, not at the reshape before it
        primary = next((p for p in placed if not is_view(p["target"])), placed[0] if placed else None)
        if primary is not None:
            whole_line(primary["line"], lines).copy_to(node)
            node.function = primary["function"]
        node.kernel = {
            "kind": kind_of(key, compiled.extern),
            "device": compiled.device,
            "graphs": graphs,
            "ops": [p["target"] for p in post],
            "lines": sorted({p["line"] for p in placed}),
            "post": post,
            "pre": list(dict.fromkeys(pre for p in post for pre in p["pre"])),
            "source_nodes": call.source_nodes,
            "original_aten": call.original_aten,
            "code": source,
            "code_line": code_line + code_offset if code_line is not None else None,
            "call_line": call.line + code_offset if call.line is not None else None,
        }
        nodes.append(node)
    _link(nodes, compiled, producing, memo)
    return nodes


def _link(nodes: list[Node], compiled: Compiled, producing: dict[str, list[str]], memo: dict[str, list[str]]) -> None:
    """users: kernel A -> kernel B when one of B's nodes takes a value A computes (through views). A value
    B computes itself is B's own, even where an earlier kernel computes it too (inductor recomputes cheap
    pointwise ops in each kernel that reads them rather than storing them)."""
    at = {n.name: index for index, n in enumerate(nodes)}
    for consumer in nodes:
        if consumer.kernel is None:  # (every node kernels_of makes has its kernel)
            continue
        own = [p["name"] for p in consumer.kernel["post"]]
        for post_name in own:
            for input_name in compiled.post.get(post_name, {}).get("inputs", []):
                if input_name in own:
                    continue
                for producer in _producers(input_name, compiled.post, producing, memo):
                    index = at.get(producer)
                    if index is None or index >= at[consumer.name]:
                        continue  # (only a kernel called before it can have made its input)
                    node = nodes[index]
                    if consumer.name not in node.users:
                        node.users.append(consumer.name)
    for node in nodes:
        node.num_users = len(node.users)


def map_kernels(compiled: list[Compiled], locate: Locate, lines: list[str]) -> tuple[list[Node], str]:
    """Every compiled graph's kernels as nodes (`graph` says which), and the wrappers' code, one after the
    other under a `# graph i of n` line when a graph break made several."""
    nodes: list[Node] = []
    parts: list[str] = []
    offset = 0
    for index, one in enumerate(compiled):
        header = f"# graph {index} of {len(compiled)}\n" if len(compiled) > 1 else ""
        offset += header.count("\n")
        nodes += kernels_of(one, index, len(compiled), locate, lines, offset)
        text = header + one.code.rstrip("\n") + "\n"
        parts.append(text)
        offset += text.count("\n") - header.count("\n")
    return nodes, "".join(parts)
