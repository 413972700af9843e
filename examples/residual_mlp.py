"""A small residual MLP: the module from fxlens's README."""
import torch
from torch import nn


class Residual(nn.Module):
    def __init__(self, width: int = 16):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.register_buffer("shift", torch.zeros(width))

    def forward(self, x):
        y = self.fc(x) + self.shift
        return torch.relu(y) + x


# fxlens: ResidualMLP(width=16, depth=2)(torch.randn(4, 8))
class ResidualMLP(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.stem = nn.Linear(8, width)
        self.blocks = nn.ModuleList([Residual(width) for _ in range(depth)])
        self.head = nn.Linear(width, 1)

    def forward(self, x):
        h = self.stem(x)
        for block in self.blocks:
            h = block(h)
        return self.head(h).sum()


if __name__ == "__main__":
    print(ResidualMLP(16, 2)(torch.randn(4, 8)))
