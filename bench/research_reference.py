"""How a user would build and call every Module class of tests/fixtures/research by hand: raw torch's side of
`python -m bench reach-research` (and of tests/cli/test_research_corpus.py). The values live here, in the
benchmark, never in fxlens: each is what a person reading the class would write for a small run (a
small width, depth 1 or 2, the image size the head was made for, inputs that agree with each other).

The corpus is ours: eight small repositories written for this benchmark in the ways research code is
published (a training script with argparse whose `args` build the model, YAML configs under `configs/`,
CIFAR-size networks whose pooled head fixes the image size, detection and segmentation heads with several
inputs, a diffusion U-Net with GroupNorm(32), a decoder that needs `setup_caches` before forward, VAEs whose
latent projection fixes the image size, attention pools with positional tables). Nothing is copied from a
public repository; the model files carry no `# fxlens:` directive.

Plain data, stdlib only: each string is evaluated in the namespace of the imported model file plus the
helpers of `SCOPE` (torch, nn, F, Namespace, `primed`, `cached`), on the CPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "tests" / "fixtures" / "repos"))
import reference  # noqa: E402
from reference import Example  # noqa: E402

__all__ = ["CORPUS", "Example", "ModelFile", "scope_helpers"]


class ModelFile(reference.ModelFile):
    """A model file of tests/fixtures/research, imported as its repository's scripts import it (root on sys.path)."""

    FOLDER = BENCH.parent / "tests" / "fixtures" / "research"


def scope_helpers() -> dict:
    """What the reference expressions may use besides the model file's own names (imports torch: only the
    raw-torch process calls it)."""
    from argparse import Namespace

    import torch
    import torch.nn.functional as F

    def primed(module, *inputs):
        """A module with lazy layers after the one forward that gives them their shapes."""
        with torch.no_grad():
            module(*inputs)
        return module

    def cached(module, max_batch_size, max_seq_length):
        """A decoder after the set-up call its generate script makes before the first forward."""
        module.setup_caches(max_batch_size, max_seq_length)
        return module

    return {"torch": torch, "nn": torch.nn, "F": F, "Namespace": Namespace, "primed": primed, "cached": cached}


def img(c: int, side: int, batch: int = 2) -> str:
    return f"torch.randn({batch}, {c}, {side}, {side})"


ONE_IMAGE = f"({img(3, 32)},)"
# the forecasting repository's `args`, small: an input window of 32 steps, 3 channels, a horizon of 8
FORECAST_ARGS = (
    "Namespace(seq_len=32, label_len=16, pred_len=8, enc_in=3, c_out=3, d_model=32, n_heads=4, e_layers=2, "
    "d_ff=64, moving_avg=5, dropout=0.1, individual=False, activation='gelu', freq='h')"
)
WINDOWS = "(torch.randn(2, 32, 3), torch.randn(2, 32, 4), torch.randn(2, 24, 3), torch.randn(2, 24, 4))"
UNET = "in_channels=3, model_channels=32, out_channels=3, channel_mult=(1, 2), num_res_blocks=1, " + (
    "attn_resolutions=(8,), resolution=16"
)
TIMES = "torch.rand(2) * 1000"
DDCONFIG = "dict(double_z=True, z_channels=4, in_channels=3, out_ch=3, ch=32, ch_mult=(1, 2), num_res_blocks=1)"
NO_PADDING = "torch.zeros(2, {h}, {w}, dtype=torch.bool)"
TRANSFORMER = "DetectionTransformer(32, 4, 1, 1, 64)"
GEN = "GenConfig(n_layer=2, n_head=4, dim=64, vocab_size=128, block_size=64)"
CAUSAL = "torch.ones(8, 8, dtype=torch.bool).tril()"
SMALL_VAE = "[8, 16, 32, 64, 128]"

CORPUS = (
    # ---- cifar-bench: CIFAR-size networks; the pooled head (avg_pool 4 / 8, five max-pools) wants 32x32
    ModelFile(
        "cifar-bench",
        "nets/residual.py",
        "nets.residual",
        {
            "ResidualUnit": Example("ResidualUnit(16, 32, 2)", f"({img(16, 8)},)"),
            "BottleneckUnit": Example("BottleneckUnit(16, 8, 2)", f"({img(16, 8)},)"),
            "CifarResNet": Example("CifarResNet(ResidualUnit, [1, 1, 1, 1])", ONE_IMAGE),
        },
    ),
    ModelFile("cifar-bench", "nets/plain.py", "nets.plain", {"PlainConvNet": Example("PlainConvNet('A')", ONE_IMAGE)}),
    ModelFile(
        "cifar-bench",
        "nets/mobile.py",
        "nets.mobile",
        {
            "InvertedBlock": Example("InvertedBlock(16, 24, 6, 1)", f"({img(16, 8)},)"),
            "MobileNetCifar": Example("MobileNetCifar()", ONE_IMAGE),
        },
    ),
    ModelFile(
        "cifar-bench",
        "nets/dense.py",
        "nets.dense",
        {
            "DenseLayer": Example("DenseLayer(24, 12)", f"({img(24, 8)},)"),
            "Transition": Example("Transition(48, 24)", f"({img(48, 8)},)"),
            "DenseNetCifar": Example("DenseNetCifar([1, 1, 1, 1], growth_rate=12)", ONE_IMAGE),
        },
    ),
    ModelFile(
        "cifar-bench",
        "nets/shuffle.py",
        "nets.shuffle",
        {
            "ChannelShuffle": Example("ChannelShuffle(4)", f"({img(16, 4)},)"),
            "ShuffleUnit": Example("ShuffleUnit(96, 96, 1, 4)", f"({img(96, 8)},)"),
        },
    ),
    ModelFile(
        "cifar-bench",
        "nets/wide.py",
        "nets.wide",
        {
            "WideBasic": Example("WideBasic(16, 32, 0.0, 2)", f"({img(16, 8)},)"),
            "WideResNet": Example("WideResNet(10, 1, 0.0, 10)", ONE_IMAGE),
        },
    ),
    # ---- forecast: every model takes the training script's argparse `args` (`configs.d_model`, ...)
    ModelFile(
        "forecast",
        "layers/embed.py",
        "layers.embed",
        {
            "ValueEmbedding": Example("ValueEmbedding(3, 32)", "(torch.randn(2, 32, 3),)"),
            "PositionalTable": Example("PositionalTable(32)", "(torch.randn(2, 32, 32),)"),
            "CalendarEmbedding": Example("CalendarEmbedding(32)", "(torch.randn(2, 32, 4),)"),
            "InputEmbedding": Example("InputEmbedding(3, 32)", "(torch.randn(2, 32, 3), torch.randn(2, 32, 4))"),
        },
    ),
    ModelFile(
        "forecast",
        "layers/blocks.py",
        "layers.blocks",
        {
            "SeriesDecomposition": Example("SeriesDecomposition(5)", "(torch.randn(2, 32, 3),)"),
            "FullAttention": Example(
                "FullAttention(32, 4)", "(torch.randn(2, 16, 32), torch.randn(2, 16, 32), torch.randn(2, 16, 32))"
            ),
            "EncoderBlock": Example("EncoderBlock(FullAttention(32, 4), 32, 64)", "(torch.randn(2, 16, 32),)"),
            "Encoder": Example(
                "Encoder([EncoderBlock(FullAttention(32, 4), 32, 64)], nn.LayerNorm(32))", "(torch.randn(2, 16, 32),)"
            ),
        },
    ),
    ModelFile(
        "forecast",
        "models/forecaster.py",
        "models.forecaster",
        {"Forecaster": Example(f"Forecaster({FORECAST_ARGS})", WINDOWS)},
    ),
    ModelFile(
        "forecast",
        "models/decomp_linear.py",
        "models.decomp_linear",
        {"DecompLinear": Example(f"DecompLinear({FORECAST_ARGS})", "(torch.randn(2, 32, 3),)")},
    ),
    ModelFile(
        "forecast",
        "models/patch_forecaster.py",
        "models.patch_forecaster",
        {
            "FlattenHead": Example("FlattenHead(3, 32 * 4, 8)", "(torch.randn(2, 3, 32, 4),)"),
            "PatchForecaster": Example(f"PatchForecaster({FORECAST_ARGS})", WINDOWS),
        },
    ),
    # ---- ldm-mini: U-Net with GroupNorm(32) (widths multiple of 32), a KL autoencoder from a YAML `ddconfig`
    ModelFile(
        "ldm-mini",
        "ldm/modules/unet.py",
        "ldm.modules.unet",
        {
            "TimeEmbedding": Example("TimeEmbedding(32, 128)", f"({TIMES},)"),
            "Resample": Example("Resample(32, down=True)", f"({img(32, 8)},)"),
            "ResBlock": Example(
                "ResBlock(in_channels=32, out_channels=64, time_channels=128)", f"({img(32, 8)}, torch.randn(2, 128))"
            ),
            "SelfAttention2d": Example("SelfAttention2d(64, 2)", f"({img(64, 8)},)"),
            "UNet": Example(f"UNet({UNET})", f"({img(3, 16)}, {TIMES})"),
            "ClassConditionalUNet": Example(
                f"ClassConditionalUNet(num_classes=10, {UNET})", f"({img(3, 16)}, {TIMES}, torch.randint(0, 10, (2,)))"
            ),
        },
    ),
    ModelFile(
        "ldm-mini",
        "ldm/modules/autoencoder.py",
        "ldm.modules.autoencoder",
        {
            "PlainResBlock": Example("PlainResBlock(32, 64)", f"({img(32, 8)},)"),
            "ConvEncoder": Example(f"ConvEncoder(**{DDCONFIG})", f"({img(3, 16)},)"),
            "ConvDecoder": Example(f"ConvDecoder(**{DDCONFIG})", f"({img(4, 8)},)"),
            "KLAutoencoder": Example(f"KLAutoencoder({DDCONFIG}, 4)", f"({img(3, 16)},)"),
        },
    ),
    # ---- setdet: a set-prediction detector built from `args`; its transformer takes src, mask, queries, pos
    ModelFile(
        "setdet",
        "setdet/position.py",
        "setdet.position",
        {
            "SinePositions": Example(
                "SinePositions(16, normalize=True)", f"({img(32, 4)}, {NO_PADDING.format(h=4, w=4)})"
            ),
            "LearnedPositions": Example("LearnedPositions(16)", f"({img(32, 4)},)"),
        },
    ),
    ModelFile(
        "setdet",
        "setdet/backbone.py",
        "setdet.backbone",
        {
            "FrozenBN": Example("FrozenBN(8)", f"({img(8, 4)},)"),
            "ConvBackbone": Example("ConvBackbone((16, 32))", f"({img(3, 32)}, {NO_PADDING.format(h=32, w=32)})"),
        },
    ),
    ModelFile(
        "setdet",
        "setdet/transformer.py",
        "setdet.transformer",
        {
            "EncoderLayer": Example("EncoderLayer(32, 4, 64)", "(torch.randn(12, 2, 32),)"),
            "DecoderLayer": Example("DecoderLayer(32, 4, 64)", "(torch.randn(5, 2, 32), torch.randn(12, 2, 32))"),
            "DetectionTransformer": Example(
                TRANSFORMER,
                f"(torch.randn(2, 32, 3, 4), {NO_PADDING.format(h=3, w=4)}, "
                "torch.randn(5, 32), torch.randn(2, 32, 3, 4))",
            ),
        },
    ),
    ModelFile(
        "setdet",
        "setdet/detector.py",
        "setdet.detector",
        {
            "BoxMLP": Example("BoxMLP(32, 32, 4, 3)", "(torch.randn(2, 5, 32),)"),
            "SetDetector": Example(
                f"SetDetector(ConvBackbone((16, 32)), SinePositions(16, normalize=True), {TRANSFORMER}, 10, 5)",
                f"({img(3, 32)}, {NO_PADDING.format(h=32, w=32)})",
            ),
        },
    ),
    # ---- promptseg: a ViT image encoder with an absolute table for img_size; prompts as optional inputs
    ModelFile(
        "promptseg",
        "promptseg/nets/norms.py",
        "promptseg.nets.norms",
        {
            "LayerNorm2d": Example("LayerNorm2d(16)", f"({img(16, 8)},)"),
            "MLP": Example("MLP(32, 64, 8, 3)", "(torch.randn(2, 5, 32),)"),
        },
    ),
    ModelFile(
        "promptseg",
        "promptseg/nets/vit.py",
        "promptseg.nets.vit",
        {
            "PatchEmbed": Example("PatchEmbed(8, 3, 32)", ONE_IMAGE),
            "GlobalBlock": Example("GlobalBlock(32, 4)", "(torch.randn(2, 4, 4, 32),)"),
            "ImageEncoder": Example(
                "ImageEncoder(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=4, out_chans=16)", ONE_IMAGE
            ),
        },
    ),
    ModelFile(
        "promptseg",
        "promptseg/nets/clicks.py",
        "promptseg.nets.clicks",
        {
            "FourierPositions": Example("FourierPositions(8)", "((4, 4),)"),
            "ClickEncoder": Example(
                "ClickEncoder(16, (4, 4), (32, 32), 8)",
                "((torch.rand(2, 3, 2) * 32, torch.randint(0, 2, (2, 3))), torch.rand(2, 4) * 32, "
                "torch.randn(2, 1, 16, 16))",
            ),
        },
    ),
    ModelFile(
        "promptseg",
        "promptseg/nets/heads.py",
        "promptseg.nets.heads",
        {
            "TokenToImage": Example(
                "TokenToImage(32, 4, 64)", "(torch.randn(2, 5, 32), torch.randn(2, 16, 32), torch.randn(2, 16, 32))"
            ),
            "MaskHead": Example(
                "MaskHead(32, heads=4)",
                f"({img(32, 4, 1)}, {img(32, 4, 1)}, torch.randn(2, 3, 32), {img(32, 4)})",
            ),
        },
    ),
    ModelFile(
        "promptseg",
        "promptseg/nets/fpn.py",
        "promptseg.nets.fpn",
        {
            "ConvNormAct": Example("ConvNormAct(64, 32)", f"({img(64, 8)},)"),
            "FPNHead": Example(
                "FPNHead((16, 32, 64, 128), 32, 32, 5)",
                f"([{img(16, 32)}, {img(32, 16)}, {img(64, 8)}, {img(128, 4)}],)",
            ),
        },
    ),
    # ---- tinygen: a decoder whose forward needs `setup_caches` (generate.py calls it first)
    ModelFile(
        "tinygen",
        "model.py",
        "model",
        {
            "CacheBuffer": Example("CacheBuffer(2, 16, 4, 16)"),  # no forward: only `update`
            "RootNorm": Example("RootNorm(64)", "(torch.randn(2, 8, 64),)"),
            "GQAttention": Example(f"GQAttention({GEN})", f"(torch.randn(2, 8, 64), rotary_table(8, 16), {CAUSAL})"),
            "GatedMLP": Example(f"GatedMLP({GEN})", "(torch.randn(2, 8, 64),)"),
            "DecoderLayer": Example(
                f"DecoderLayer({GEN})", f"(torch.randn(2, 8, 64), torch.arange(8), rotary_table(8, 16), {CAUSAL})"
            ),
            "CachedDecoder": Example(
                f"cached(CachedDecoder({GEN}), 2, 16)", "(torch.randint(0, 128, (2, 8)), torch.arange(8))"
            ),
            "LongRotary": Example(
                "LongRotary(head_dim=16, max_positions=64)", "(torch.randn(2, 8, 4, 16), torch.arange(8))"
            ),
        },
    ),
    # ---- poolvit: pools and tables that fix the token count, an image-size assert, *args forwards, lazy layers
    ModelFile(
        "poolvit",
        "poolvit/pooling.py",
        "poolvit.pooling",
        {
            "AttentionPool": Example("AttentionPool(4, 64, 4, 32)", f"({img(64, 4)},)"),
            "GeneralizedMean": Example("GeneralizedMean()", f"({img(8, 4)},)"),
            "QueryPool": Example("QueryPool(32, 4, 4)", "(torch.randn(2, 10, 32),)"),
        },
    ),
    ModelFile(
        "poolvit",
        "poolvit/convnet.py",
        "poolvit.convnet",
        {
            "PoolBottleneck": Example("PoolBottleneck(32, 16, 2)", f"({img(32, 8)},)"),
            "PooledResNet": Example(
                "PooledResNet([1, 1, 1, 1], 32, 4, input_resolution=64, width=16)", f"({img(3, 64)},)"
            ),
        },
    ),
    ModelFile(
        "poolvit",
        "poolvit/vit.py",
        "poolvit.vit",
        {
            "PatchTokens": Example("PatchTokens(32, 8, 3, 32)", ONE_IMAGE),
            "AxialRope": Example("AxialRope(10000, [4, 6, 6])", "(torch.randint(0, 8, (2, 10, 3)),)"),
            "ChannelNorm": Example("ChannelNorm(8)", f"({img(8, 4)},)"),
            "Block": Example("Block(32, 4)", "(torch.randn(2, 17, 32),)"),
            "MaskedViT": Example("MaskedViT(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=4)", ONE_IMAGE),
        },
    ),
    ModelFile(
        "poolvit",
        "poolvit/tokenizer.py",
        "poolvit.tokenizer",
        {
            "Codebook": Example("Codebook(64, 8)", f"({img(8, 4)},)"),
            "GridTokenizer": Example("GridTokenizer(32, 8, 64)", f"({img(3, 64)},)"),
            "LazyHead": Example(f"primed(LazyHead(10, 32), {img(16, 2)})", f"({img(16, 2)},)"),
            "LazyStem": Example(f"primed(LazyStem(8), {img(3, 8)})", f"({img(3, 8)},)"),
        },
    ),
    # ---- vae-zoo: VAEs from a YAML config; five stride-2 stages and `hidden_dims[-1] * 4` want 64x64
    ModelFile(
        "vae-zoo",
        "vaes/gaussian.py",
        "vaes.gaussian",
        {
            "GaussianVAE": Example(f"GaussianVAE(3, 16, {SMALL_VAE})", f"({img(3, 64)},)"),
            "WeightedKLVAE": Example(f"WeightedKLVAE(3, 16, {SMALL_VAE})", f"({img(3, 64)},)"),
            "ConditionalVAE": Example(
                f"ConditionalVAE(3, 10, 16, {SMALL_VAE}, img_size=64)", f"({img(3, 64)}, torch.eye(10)[:2])"
            ),
        },
    ),
    ModelFile(
        "vae-zoo",
        "vaes/codebook.py",
        "vaes.codebook",
        {
            "Quantizer": Example("Quantizer(64, 16)", f"({img(16, 4)},)"),
            "ResStack": Example("ResStack(16, 2)", f"({img(16, 8)},)"),
            "CodebookVAE": Example("CodebookVAE(3, 16, 64, [16, 32])", ONE_IMAGE),
        },
    ),
)
