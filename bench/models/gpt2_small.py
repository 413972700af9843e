"""A decoder shaped like GPT-2 small (12 layers, width 768, 12 heads, 1024 learned positions, a 50257-token
vocabulary; pre-norm blocks with a GELU MLP; the output head shares the token table): the model fxlens's
benchmarks and graph-view tests trace. Every class takes the one config object."""
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class GPTConfig:
    vocab_size: int = 50257
    n_positions: int = 1024
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    mlp_ratio: int = 4
    norm_eps: float = 1e-5


class CausalSelfAttention(nn.Module):
    """All heads' queries, keys and values from one projection; causal scaled-dot-product attention."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        if config.n_embd % config.n_head:
            raise ValueError(f"width {config.n_embd} does not split into {config.n_head} heads")
        self.heads = config.n_head
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.out = nn.Linear(config.n_embd, config.n_embd)

    def forward(self, x):
        batch, length, width = x.shape
        qkv = self.qkv(x).view(batch, length, 3, self.heads, width // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (batch, heads, length, head width)
        mixed = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(mixed.transpose(1, 2).reshape(batch, length, width))


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        hidden = config.mlp_ratio * config.n_embd
        self.fc_in = nn.Linear(config.n_embd, hidden)
        self.act = nn.GELU(approximate="tanh")
        self.fc_out = nn.Linear(hidden, config.n_embd)

    def forward(self, x):
        return self.fc_out(self.act(self.fc_in(x)))


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.norm1 = nn.LayerNorm(config.n_embd, eps=config.norm_eps)
        self.attn = CausalSelfAttention(config)
        self.norm2 = nn.LayerNorm(config.n_embd, eps=config.norm_eps)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.tokens = nn.Embedding(config.vocab_size, config.n_embd)
        self.positions = nn.Embedding(config.n_positions, config.n_embd)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.norm = nn.LayerNorm(config.n_embd, eps=config.norm_eps)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.head.weight = self.tokens.weight

    def forward(self, ids):
        where = torch.arange(ids.shape[1], device=ids.device)
        x = self.tokens(ids) + self.positions(where)
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        return self.head(x)


if __name__ == "__main__":
    with torch.device("meta"):
        model = GPT(GPTConfig())
    print(f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters")
