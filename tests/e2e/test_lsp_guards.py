"""pytest-lsp end to end: the dynamo level's guards in the editor. The lens on `def forward` counts the checks
torch's own guard log prints for the same class (tests/support/raw_guards.py); the hover on `forward` says what
the graph assumed and what recompiles it, the hover on a line the guards that line made."""

from __future__ import annotations

import json
import sys

import pytest
import pytest_lsp
from background_run import BackgroundRun
from lsp_harness import FIXTURES, ROOT, config, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

BLEND = {"Blend": {"build": "Blend(16, 8)", "args": [[4, 16], 2], "device": "meta"}}


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    run = BackgroundRun(
        [
            sys.executable,
            str(ROOT / "tests" / "support" / "raw_guards.py"),
            str(FIXTURES / "guarded.py"),
            json.dumps(BLEND),
        ],
        tmp_path_factory.mktemp("raw-guards"),
        timeout=300,
    )
    yield run
    run.stop()


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client, {"levels": ["fx", "dynamo"]})
    yield
    await lsp_client.shutdown_session()


def _line(doc, text: str) -> int:
    return next(i for i, line in enumerate(doc.lines, 1) if text in line)


async def test_a_lens_on_forward_counts_the_guards_torch_prints(client, tmp_path, raw):
    doc = open_doc(client, "guarded.py", tmp_path)
    await doc.traced()
    lenses = await doc.lenses()
    forward = _line(doc, "def forward(self, x, repeats")
    [title] = [lens.command.title for lens in lenses if lens.range.start.line == forward - 1]
    [tree] = raw.json()["Blend"]["trees"]
    assert title.startswith(f"dynamo guards: {len(tree)} ("), title
    assert "on inputs" in title and "on the module" in title and "on torch's state" in title
    # the class with a graph break: its two compiled frames counted on its one `def`
    recentre = _line(doc, "def forward(self, x):")
    [split] = [lens.command.title for lens in lenses if lens.range.start.line == recentre - 1]
    assert ", 2 compiled frames (" in split, split


async def test_the_hover_on_forward_says_what_recompiles(client, tmp_path):
    doc = open_doc(client, "guarded.py", tmp_path)
    await doc.traced()
    text = await doc.hover(doc.at(_line(doc, "def forward(self, x, repeats"), "forward"))
    assert text is not None
    assert "`repeats` == 2 — recompiles on passing another value" in text
    assert (
        "`x` a float32 tensor [4, 16] — recompiles on another dtype, device or requires_grad, or another size" in text
    )
    assert "`self.gain` == 0.5 — recompiles on assigning another value" in text
    assert "`self.gated` is True" in text
    assert "`self.proj.weight` a float32 tensor [8, 16], requires_grad" in text
    assert "torch's state: grad mode on" in text


async def test_the_hover_on_a_line_says_the_guards_it_made(client, tmp_path):
    doc = open_doc(client, "guarded.py", tmp_path)
    await doc.traced()
    text = await doc.hover(doc.at(_line(doc, "if self.gated:"), "gated"))
    assert text is not None and "**dynamo guards** from this line: 1" in text
    assert "`self.gated` is True — recompiles on assigning another value" in text
    assert "`self.gain`" not in text  # another line's


async def _actions(client, doc, line: int) -> list[types.CodeAction]:
    where = types.Range(start=doc.at(line), end=doc.at(line))
    found = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            range=where,
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    return [a for a in found or [] if isinstance(a, types.CodeAction) and a.title.startswith("Compile with dynamic")]


async def test_dynamic_true_is_offered_with_its_proof_and_edits_the_files_torch_compile(client, tmp_path):
    doc = open_doc(client, "guarded.py", tmp_path)
    await doc.traced()
    forward = _line(doc, "def forward(self, x, repeats")
    [action] = await _actions(client, doc, forward)
    assert action.title == (
        "Compile with dynamic=True — recompiles 1 → 0 across x.shape[0] 4 → 8, outputs equal to eager on 2 sizes"
    )
    [edit] = action.edit.changes[doc.uri]
    text = doc.lines[edit.range.start.line]
    at = edit.range.start.character
    assert (text[:at] + edit.new_text + text[at:]).strip() == "blend = torch.compile(Blend(16, 8), dynamic=True)"
    # offered on the call too; the hover on forward says the proof, and the mark_dynamic line for other callers
    assert [a.title for a in await _actions(client, doc, _line(doc, "torch.compile(Blend"))] == [action.title]
    hover = await doc.hover(doc.at(forward, "forward"))
    assert "sizes that vary: x.shape[0] 4 → 8" in hover and "1 recompile" in hover
    assert "`torch._dynamo.mark_dynamic(x, 0)` before the call: 0 recompiles" in hover


async def test_no_dynamic_action_where_the_model_fixes_its_size(client, tmp_path):
    doc = open_doc(client, "guarded.py", tmp_path)
    await doc.traced()
    line = _line(doc, "return x.reshape(2, 12)") - 1  # Pairs.forward
    assert await _actions(client, doc, line) == []
    hover = await doc.hover(doc.at(line, "forward"))
    assert (
        "(x.shape[0]) cannot: run at a larger size, RuntimeError: shape '[2, 12]' is invalid for input of size 48"
        in hover
    )
