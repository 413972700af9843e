"""The models the benchmarks use: where their text comes from, how raw torch builds and calls them (the
same sizes fxlens picks: batch 2, sequence 8), and an edit a user might make to each."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


@dataclass(frozen=True)
class ModelSpec:
    key: str
    source: Path
    build: str  # expression building the top model, in the file's namespace
    inputs: str  # expression for its positional inputs (a tuple)
    free_dims: int  # leading dims fxlens names B (and T): 0 when a directive fixes the sizes
    edit: tuple[str, str]  # (text, replacement): toggled back and forth by the edit benchmark
    replace: tuple[str, str] | None = None  # turns the source into this variant
    file_name: str = ""

    def text(self) -> str:
        text = self.source.read_text()
        if self.replace is not None:
            assert self.replace[0] in text, f"{self.key}: {self.replace[0]!r} not in {self.source}"
            text = text.replace(*self.replace)
        return text

    def edited(self, text: str) -> str:
        """The text with the edit applied, or undone if it already is."""
        before, after = self.edit
        if after in text:
            return text.replace(after, before, 1)
        assert before in text, f"{self.key}: {before!r} not in the text"
        return text.replace(before, after, 1)

    def materialise(self, folder: Path) -> Path:
        """Write the text into `folder` (a fresh path, so no editor state or cache is shared)."""
        path = folder / (self.file_name or self.source.name)
        path.write_text(self.text())
        return path


GPT_BUILD, GPT_INPUTS = "GPT(GPTConfig())", "(torch.zeros(2, 8, dtype=torch.long),)"
GPT_EDIT = ("x = self.norm(x)", "x = self.norm(x) * 2.0")

MODELS = {
    "small": ModelSpec(
        "small",
        ROOT / "examples" / "residual_mlp.py",
        "ResidualMLP(width=16, depth=2)",
        "(torch.randn(4, 8),)",
        0,
        ("return self.head(h).sum()", "return self.head(h).sum() * 2.0"),
    ),
    "gpt2-12": ModelSpec("gpt2-12", BENCH / "models" / "gpt2_small.py", GPT_BUILD, GPT_INPUTS, 2, GPT_EDIT),
    "gpt2-48": ModelSpec(
        "gpt2-48",
        BENCH / "models" / "gpt2_small.py",
        GPT_BUILD,
        GPT_INPUTS,
        2,
        GPT_EDIT,
        replace=("n_layer: int = 12", "n_layer: int = 48"),
        file_name="gpt2_48.py",
    ),
    "llama70b": ModelSpec(
        "llama70b",
        BENCH / "models" / "llama70b.py",
        "Llama(LlamaConfig())",
        "(torch.zeros(2, 8, dtype=torch.long),)",
        2,
        ("return self.lm_head(self.norm(x))", "return self.lm_head(self.norm(x)) * 2.0"),
    ),
}
