"""Module scopes for levels whose nodes carry none, so the graph view can group them like the others.

The dynamo level's nodes come without a scope (its payload has no nn_module_stack), and the backward
level's gradient nodes keep the line and `Class.forward` of the forward code they differentiate but
not its instance path. Without scopes the view draws a thousand loose boxes: the layout of GPT-2's
backward ran for minutes. The instance is recovered from what is known (pure, on payload dicts):

- a parameter dynamo lifts to a placeholder names its module: `L_self_modules_transformer_modules_h_
  modules_0_modules_attn_modules_c_attn_parameters_weight_` is `transformer.h.0.attn.c_attn.weight`;
- a node whose function is `Cls.forward` runs in an instance of `Cls`: the one its inputs come from
  (or, failing that, the one the node before it ran in), cut back to the path whose class is `Cls`;
  where that finds none (a norm's first ops read only the residual stream, the parent's), the one its
  users ran in: the norm's last op reads its weight, which names it;
- a node of a helper function (`rotate_half`) runs in its caller's instance: its inputs'.
"""

from __future__ import annotations

import re
from typing import Any

# dynamo's name for a lifted attribute: L_self_ + (modules_<name>_)* + parameters_|buffers_ + <name> + _
_LIFTED = re.compile(r"^L_self_((?:modules_.+?_)*)(parameters|buffers)_(.+?)_?$")
_PART = re.compile(r"(?:^|_)modules_")


def lifted_path(target: str) -> str | None:
    """`transformer.h.0.attn.c_attn.weight` for dynamo's lifted parameter or buffer placeholder target."""
    match = _LIFTED.match(target)
    if not match:
        return None
    modules = [part for part in _PART.split(match.group(1).rstrip("_")) if part]
    return ".".join([*modules, match.group(3)])


def _owner(function: str | None) -> str | None:
    match = re.match(r"^(\w+)\.forward$", function or "")
    return match.group(1) if match else None


def _instance_of(path: str, cls: str, classes: dict[str, str]) -> str | None:
    """The longest prefix of `path` (itself included) that is an instance of `cls`."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        prefix = ".".join(parts[:cut])
        if classes.get(prefix) == cls:
            return prefix
    return None


def derive_scopes(
    nodes: list[dict[str, Any]], edges: list[dict[str, Any]], scopes: dict[str, dict[str, Any]], top_class: str
) -> None:
    """Fills in the `scope` of nodes that have none (in place); lifted parameters get their path as label."""
    classes = {path: info.get("class", "") for path, info in scopes.items()}
    inputs: dict[str, list[str]] = {n["id"]: [] for n in nodes}
    for edge in edges:
        if edge["target"] in inputs:
            inputs[edge["target"]].append(edge["source"])
    users: dict[str, list[str]] = {n["id"]: [] for n in nodes}
    for edge in edges:
        if edge["source"] in users:
            users[edge["source"]].append(edge["target"])
    scope_of = {n["id"]: n.get("scope") or "" for n in nodes}
    previous = ""
    for node in nodes:
        path = lifted_path(node.get("target") or "") if node["op"] == "placeholder" else None
        if path is not None:
            module = path.rpartition(".")[0]
            scope_of[node["id"]] = node["scope"] = module
            lines = node["label"].split("\n")
            node["label"] = "\n".join([path, "placeholder (lifted)", *lines[2:]])
            node["path"] = path
            continue
        if node.get("scope"):
            previous = node["scope"]
            continue
        cls = _owner(node.get("function"))
        candidates = [scope_of[i] for i in inputs[node["id"]] if scope_of[i]] + [previous]
        if cls is None and node.get("function") and candidates[0]:
            found = candidates[0]  # a helper function, called from the instance its inputs come from
        elif cls is None or cls == top_class:
            continue
        else:
            found = next((s for s in (_instance_of(c, cls, classes) for c in candidates) if s), None)
        if found is not None:
            scope_of[node["id"]] = node["scope"] = found
            previous = found
    # backwards, for what found none: the instance its users (or the node after it) ran in
    following = ""
    for node in reversed(nodes):
        if node.get("scope"):
            following = node["scope"]
            continue
        cls = _owner(node.get("function"))
        if cls is None or cls == top_class or node["op"] == "placeholder":
            continue
        candidates = [scope_of[u] for u in users[node["id"]] if scope_of[u]] + [following]
        found = next((s for s in (_instance_of(c, cls, classes) for c in candidates) if s), None)
        if found is not None:
            scope_of[node["id"]] = node["scope"] = found
            following = found
