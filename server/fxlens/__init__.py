"""fxlens: see what torch.fx makes of your nn.Module, in your editor and your terminal."""

__version__ = "0.1.0"
