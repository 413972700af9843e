"""A LLaMA-70B-shaped decoder: 80 layers, hidden 8192, grouped-query attention (64 query / 8 key-value
heads), SwiGLU MLP, RMSNorm, rotary embeddings. Every class takes the config; nothing is allocated."""
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class LlamaConfig:
    vocab_size: int = 128256
    hidden: int = 8192
    intermediate: int = 28672
    n_layers: int = 80
    n_heads: int = 64
    n_kv_heads: int = 8
    max_positions: int = 8192
    rope_theta: float = 500000.0
    eps: float = 1e-5


class RMSNorm(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.eps = config.eps
        self.weight = nn.Parameter(torch.ones(config.hidden))

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


class Rotary(nn.Module):
    def __init__(self, config):
        super().__init__()
        head_dim = config.hidden // config.n_heads
        inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
        angles = torch.outer(torch.arange(config.max_positions).float(), inv_freq)
        self.register_buffer("cos", torch.cat([angles, angles], dim=-1).cos(), persistent=False)
        self.register_buffer("sin", torch.cat([angles, angles], dim=-1).sin(), persistent=False)

    def forward(self, q, k):
        length = q.shape[-2]
        # torch.narrow, not self.cos[:length]: slicing a plain buffer with a traced size breaks fx
        cos, sin = torch.narrow(self.cos, 0, 0, length), torch.narrow(self.sin, 0, 0, length)
        return q * cos + quarter_turn(q) * sin, k * cos + quarter_turn(k) * sin


def quarter_turn(x):
    """(a, b) -> (-b, a) across the two halves of the last dim: the 90-degree turn the rotary formula adds."""
    first, second = x.chunk(2, dim=-1)
    return torch.cat([-second, first], dim=-1)


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_heads, self.n_kv_heads = config.n_heads, config.n_kv_heads
        self.head_dim = config.hidden // config.n_heads
        self.q_proj = nn.Linear(config.hidden, config.n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(config.hidden, config.n_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(config.hidden, config.n_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(config.n_heads * self.head_dim, config.hidden, bias=False)
        self.rotary = Rotary(config)

    def forward(self, x):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q, k = self.rotary(q, k)
        repeat = self.n_heads // self.n_kv_heads
        k = k.repeat_interleave(repeat, dim=1)
        v = v.repeat_interleave(repeat, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, -1))


class SwiGLU(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden, config.intermediate, bias=False)
        self.up_proj = nn.Linear(config.hidden, config.intermediate, bias=False)
        self.down_proj = nn.Linear(config.intermediate, config.hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.input_norm = RMSNorm(config)
        self.attn = Attention(config)
        self.post_norm = RMSNorm(config)
        self.mlp = SwiGLU(config)

    def forward(self, x):
        x = x + self.attn(self.input_norm(x))
        return x + self.mlp(self.post_norm(x))


class Llama(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden)
        self.layers = nn.ModuleList([DecoderLayer(config) for _ in range(config.n_layers)])
        self.norm = RMSNorm(config)
        self.lm_head = nn.Linear(config.hidden, config.vocab_size, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))
