"""Which node a pass made from which: node.meta["from_node"], recorded the way torch records it.

torch's GraphTransformObserver fills `from_node` only when inductor's provenance tracking is on; the
same hooks (create / erase / replace on the GraphModule) are registered here for the pass's run, so a
node that took over another's users (`replace_all_uses_with`) names the node it replaces. A pass that
returns a new GraphModule escapes the hooks: the diff then matches nodes by name and target.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch.fx as fx
from torch.fx.traceback import NodeSource, NodeSourceAction


@contextmanager
def recording(gm: fx.GraphModule, pass_name: str) -> Iterator[None]:
    by_name = {node.name: node for node in gm.graph.nodes}

    def created(node: fx.Node) -> None:
        by_name[node.name] = node

    def erased(node: fx.Node) -> None:
        by_name.pop(node.name, None)

    def replaced(old: fx.Node, new: str, user: fx.Node) -> None:
        node = by_name.get(new)
        if node is None:
            return
        sources = node.meta.setdefault("from_node", [])
        if any(getattr(s.node_info, "name", None) == old.name for s in sources):
            return  # the hook runs once per user of `old`
        sources.append(NodeSource(old, pass_name, NodeSourceAction.REPLACE))

    gm._register_create_node_hook(created)
    gm._register_erase_node_hook(erased)
    gm._register_replace_node_hook(replaced)
    try:
        yield
    finally:
        gm._unregister_create_node_hook(created)
        gm._unregister_erase_node_hook(erased)
        gm._unregister_replace_node_hook(replaced)


def replaced_names(node: fx.Node) -> list[str]:
    """The names of the nodes `node` was made from, as its from_node provenance records them."""
    names = []
    for source in node.meta.get("from_node", []) or []:
        name = getattr(getattr(source, "node_info", None), "name", None)
        if name and name not in names:
            names.append(name)
    return names
