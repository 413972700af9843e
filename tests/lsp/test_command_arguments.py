"""The commands' arguments as the clients send them (a positional list) become each command's typed object;
arguments a command cannot read get its usual answer with a message naming what it takes, never an error."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest
from fxlens.lsp.command_arguments import ArgumentError, DocumentArguments, NoArguments
from fxlens.lsp.commands import ShowGraphArguments
from fxlens.lsp.kernel_code import KernelCodeArguments
from fxlens.lsp.passes import RunPassArguments
from fxlens.lsp.server import build_server

URI = "file:///work/model.py"
PASSES = "file:///work/passes.py"


def test_show_graph_reads_what_the_editors_send():
    # VS Code's lens and graph view
    assert ShowGraphArguments.parse([URI]) == ShowGraphArguments(URI, None, "fx", False)
    assert ShowGraphArguments.parse([URI, "Net"]) == ShowGraphArguments(URI, "Net", "fx", False)
    assert ShowGraphArguments.parse([URI, None, "aten"]) == ShowGraphArguments(URI, None, "aten", False)
    # Neovim's :FxlensGraph (no class: vim.NIL, JSON null), which opens the file it is told of
    assert ShowGraphArguments.parse([URI, None, "fx", True]) == ShowGraphArguments(URI, None, "fx", True)
    # only JSON true asks for the file; a level that is not a string is the default one
    assert ShowGraphArguments.parse([URI, "Net", 3, "yes"]) == ShowGraphArguments(URI, "Net", "fx", False)


def test_run_pass_reads_the_code_action_and_the_graph_view():
    assert RunPassArguments.parse([URI, "Net", "drop_relu", PASSES, True]) == RunPassArguments(
        URI, "Net", "drop_relu", PASSES, True
    )
    # without a pass document, the pass is looked for in the model's own
    assert RunPassArguments.parse([URI, "Net", "fuse_bn"]) == RunPassArguments(URI, "Net", "fuse_bn", URI, False)


def test_kernel_code_and_document_commands():
    assert KernelCodeArguments.parse([URI, "Gate", "cpp_fused_add_0:2"]) == KernelCodeArguments(
        URI, "Gate", "cpp_fused_add_0:2", False
    )
    assert KernelCodeArguments.parse([URI, "Gate", "k:1", True]) == KernelCodeArguments(URI, "Gate", "k:1", True)
    assert DocumentArguments.parse([URI]) == DocumentArguments(URI)
    assert NoArguments.parse(["anything", 1]) == NoArguments()


@pytest.mark.parametrize(
    "parse", [ShowGraphArguments.parse, RunPassArguments.parse, KernelCodeArguments.parse, DocumentArguments.parse]
)
@pytest.mark.parametrize("arguments", [[], [None], [42, "Net"], [{"uri": URI}], [""], [[URI]]])
def test_arguments_without_a_document_are_refused(parse, arguments):
    assert isinstance(parse(arguments), ArgumentError)


@pytest.mark.parametrize("arguments", [[URI], [URI, "Net"], [URI, None, "drop_relu"], [URI, "Net", 7]])
def test_run_pass_and_kernel_code_need_a_class_and_a_name(arguments):
    assert isinstance(RunPassArguments.parse(arguments), ArgumentError)
    assert isinstance(KernelCodeArguments.parse(arguments), ArgumentError)


def _answer(handler: Any, *arguments: Any) -> dict:
    result = handler(*arguments)
    return asyncio.run(result) if inspect.isawaitable(result) else result


@pytest.mark.parametrize(
    "name, needs",
    [
        ("fxlens.showGraph", "[uri of an open document, className?, level?, toDocument?]"),
        ("fxlens.retrace", "[uri of an open document]"),
        ("fxlens.kernelCode", "[uri of an open document, className, kernel, toDocument?]"),
        ("fxlens.runPass", "[uri of an open document, class name, pass name]"),
        ("fxlens.passChoices", "[uri of an open document]"),
    ],
)
def test_bad_arguments_get_the_commands_answer_saying_what_it_needs(name, needs):
    handler = build_server().protocol.fm.commands[name]  # as pygls registered it: the server comes first
    for arguments in ([], [None, "Net"], [3.5]):
        answer = _answer(handler, *arguments)
        assert answer["message"] == f"{name} needs {needs}", answer
        assert answer.get("ok") is not True
    shown = _answer(handler)
    if name == "fxlens.showGraph":  # the graph view's payload: every key present, as for any other failure
        assert {"uri", "class", "level", "levels", "ok", "graph"} <= set(shown)
    if name == "fxlens.passChoices":
        assert (shown["classes"], shown["passes"]) == ([], [])
