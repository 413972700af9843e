"""The installed-package corpus of bench/reach_packages.py (issue 22): which files of each pip-installed
package count as its model files, and how the package's own public constructors build tiny models.

Nothing here is a package's code: each builder is one call of the package's public API (a config class at a
tiny size, a factory, a constructor), evaluated in a namespace holding `torch`, the package and the helpers
below; `args` / `kwargs` are the top model's inputs. No builder loads weights or touches the network.
"""

from __future__ import annotations

from reach_corpus_entry import IDS, Builder, Package
from reach_corpus_hf import HF_PACKAGES

PACKAGES = (
    *HF_PACKAGES,
    Package(
        "x-transformers",
        "x_transformers",
        ("*.py",),
        (
            Builder(
                "TransformerWrapper(Decoder)",
                "m.TransformerWrapper(num_tokens=100, max_seq_len=16, attn_layers=m.Decoder(dim=32, depth=2, heads=4))",
                IDS,
            ),
            Builder(
                "TransformerWrapper(Encoder, rotary, glu)",
                "m.TransformerWrapper(num_tokens=100, max_seq_len=16, "
                "attn_layers=m.Encoder(dim=32, depth=2, heads=4, rotary_pos_emb=True, ff_glu=True, "
                "use_rmsnorm=True))",
                IDS,
            ),
            Builder(
                "ViTransformerWrapper",
                "m.ViTransformerWrapper(image_size=32, patch_size=8, num_classes=10, "
                "attn_layers=m.Encoder(dim=32, depth=2, heads=4))",
                "(image(),)",
            ),
            Builder(
                "ContinuousTransformerWrapper",
                "m.ContinuousTransformerWrapper(dim_in=8, dim_out=8, max_seq_len=16, "
                "attn_layers=m.Decoder(dim=32, depth=2, heads=4))",
                "(torch.randn(2, 8, 8),)",
            ),
            Builder(
                "XTransformer",
                "m.XTransformer(dim=32, enc_num_tokens=100, enc_depth=1, enc_heads=4, "
                "enc_max_seq_len=16, dec_num_tokens=100, dec_depth=1, dec_heads=4, dec_max_seq_len=16)",
                "(ids(), ids())",
            ),
            Builder(
                "TransformerWrapper(Decoder, alibi, scalenorm, gating)",
                "m.TransformerWrapper(num_tokens=100, "
                "max_seq_len=16, attn_layers=m.Decoder(dim=32, depth=2, heads=4, alibi_pos_bias=True, "
                "ff_relu_squared=True, use_scalenorm=True, gate_residual=True, shift_tokens=1, attn_qk_norm=True))",
                IDS,
            ),
            Builder(
                "TransformerWrapper(Encoder, dynamic bias, sandwich)",
                "m.TransformerWrapper(num_tokens=100, "
                "max_seq_len=16, attn_layers=m.Encoder(dim=32, depth=2, heads=4, dynamic_pos_bias=True, "
                "sandwich_norm=True, residual_attn=True, ff_swish=True, ff_glu=True, attn_gate_values=True))",
                IDS,
            ),
            Builder(
                "TransformerWrapper(Decoder, rel_pos_bias, memory tokens)",
                "m.TransformerWrapper(num_tokens=100, "
                "max_seq_len=16, num_memory_tokens=2, attn_layers=m.Decoder(dim=32, depth=2, heads=4, "
                "rel_pos_bias=True, "
                "macaron=True, attn_talking_heads=True, pre_norm=False))",
                IDS,
            ),
            Builder(
                "AutoregressiveWrapper",
                "m.AutoregressiveWrapper(m.TransformerWrapper(num_tokens=100, "
                "max_seq_len=16, attn_layers=m.Decoder(dim=32, depth=2, heads=4)))",
                IDS,
            ),
        ),
    ),
    Package(
        "mambapy",
        "mambapy",
        ("*.py",),
        (
            Builder(
                "Mamba",
                "importlib.import_module('mambapy.mamba').Mamba(importlib.import_module('mambapy.mamba')"
                ".MambaConfig(d_model=16, n_layers=2))",
                "(torch.randn(2, 8, 16),)",
            ),
            Builder(
                "LM",
                "importlib.import_module('mambapy.lm').LM(importlib.import_module('mambapy.mamba')"
                ".MambaConfig(d_model=16, n_layers=2), vocab_size=100)",
                IDS,
            ),
            Builder(
                "Jamba",
                "importlib.import_module('mambapy.jamba').Jamba(importlib.import_module('mambapy.jamba')"
                ".JambaLMConfig(d_model=16, n_layers=2, mlp_size=32, num_attention_heads=4, num_key_value_heads=2, "
                "num_experts=2, num_experts_per_tok=1, attn_layer_period=2, attn_layer_offset=1))",
                "(torch.randn(2, 8, 16),)",
            ),
        ),
    ),
    Package(
        "perceiver-pytorch",
        "perceiver_pytorch",
        ("*.py",),
        (
            Builder(
                "Perceiver",
                "m.Perceiver(input_channels=3, input_axis=2, num_freq_bands=4, max_freq=10., depth=2, "
                "num_latents=8, latent_dim=32, cross_heads=1, latent_heads=2, cross_dim_head=8, latent_dim_head=8, "
                "num_classes=10)",
                "(torch.randn(2, 8, 8, 3),)",
            ),
            Builder(
                "PerceiverIO",
                "m.PerceiverIO(dim=16, queries_dim=16, logits_dim=10, depth=2, num_latents=8, "
                "latent_dim=32, cross_heads=1, latent_heads=2, cross_dim_head=8, latent_dim_head=8)",
                "(torch.randn(2, 8, 16),)",
                "dict(queries=torch.randn(2, 4, 16))",
            ),
            Builder(
                "PerceiverLM",
                "m.PerceiverLM(num_tokens=100, dim=16, depth=2, max_seq_len=16, num_latents=8, "
                "latent_dim=32, cross_heads=1, latent_heads=2, cross_dim_head=8, latent_dim_head=8)",
                IDS,
            ),
        ),
    ),
    Package(
        "efficientnet-pytorch",
        "efficientnet_pytorch",
        ("model.py", "utils.py"),
        (
            Builder(
                "EfficientNet.from_name('efficientnet-b0')",
                "m.EfficientNet.from_name('efficientnet-b0', image_size=32, num_classes=10)",
                "(image(),)",
            ),
        ),
    ),
    Package(
        "monai",
        "monai",
        ("networks/nets/*.py", "networks/blocks/*.py"),
        (
            Builder(
                "UNet",
                "n.UNet(spatial_dims=2, in_channels=1, out_channels=2, channels=(4, 8, 16), strides=(2, 2), "
                "num_res_units=1)",
                "(image(1, 16),)",
            ),
            Builder(
                "BasicUNet",
                "n.BasicUNet(spatial_dims=2, in_channels=1, out_channels=2, features=(4, 4, 8, 8, 16, 4))",
                "(image(1, 32),)",
            ),
            Builder(
                "SegResNet",
                "n.SegResNet(spatial_dims=2, init_filters=8, in_channels=1, out_channels=2)",
                "(image(1, 16),)",
            ),
            Builder("DenseNet121", "n.DenseNet121(spatial_dims=2, in_channels=1, out_channels=2)", "(image(1, 32),)"),
            Builder("resnet18", "n.resnet18(spatial_dims=2, n_input_channels=1, num_classes=2)", "(image(1, 32),)"),
            Builder(
                "ViT",
                "n.ViT(in_channels=1, img_size=(16, 16), patch_size=(8, 8), hidden_size=32, mlp_dim=64, "
                "num_layers=2, num_heads=4, spatial_dims=2)",
                "(image(1, 16),)",
            ),
            Builder(
                "UNETR",
                "n.UNETR(in_channels=1, out_channels=2, img_size=(16, 16), feature_size=4, hidden_size=32, "
                "mlp_dim=64, num_heads=4, spatial_dims=2)",
                "(image(1, 16),)",
            ),
            Builder(
                "SwinUNETR",
                "n.SwinUNETR(in_channels=1, out_channels=2, feature_size=12, spatial_dims=2, "
                "depths=(1, 1, 1, 1), num_heads=(3, 3, 3, 3))",
                "(image(1, 64),)",
            ),
            Builder(
                "AttentionUnet",
                "n.AttentionUnet(spatial_dims=2, in_channels=1, out_channels=2, channels=(4, 8, 16), strides=(2, 2))",
                "(image(1, 16),)",
            ),
            Builder(
                "VarAutoEncoder",
                "n.VarAutoEncoder(spatial_dims=2, in_shape=(1, 16, 16), out_channels=1, "
                "latent_size=8, channels=(4, 8), strides=(2, 2))",
                "(image(1, 16),)",
            ),
            Builder(
                "DynUNet",
                "n.DynUNet(spatial_dims=2, in_channels=1, out_channels=2, kernel_size=[3, 3, 3], "
                "strides=[1, 2, 2], upsample_kernel_size=[2, 2])",
                "(image(1, 16),)",
            ),
            Builder(
                "EfficientNetBN",
                "n.EfficientNetBN('efficientnet-b0', pretrained=False, spatial_dims=2, in_channels=1, num_classes=2)",
                "(image(1, 32),)",
            ),
            Builder("HighResNet", "n.HighResNet(spatial_dims=2, in_channels=1, out_channels=2)", "(image(1, 16),)"),
            Builder(
                "SEResNet50",
                "n.SEResNet50(spatial_dims=2, in_channels=1, num_classes=2, pretrained=False)",
                "(image(1, 32),)",
            ),
            Builder("VNet", "n.VNet(spatial_dims=2, in_channels=1, out_channels=2, dropout_dim=2)", "(image(1, 16),)"),
            Builder(
                "RegUNet", "n.RegUNet(spatial_dims=2, in_channels=1, num_channel_initial=4, depth=2)", "(image(1, 16),)"
            ),
            Builder(
                "DiffusionModelUNet",
                "n.DiffusionModelUNet(spatial_dims=2, in_channels=1, out_channels=1, "
                "channels=(8, 16), attention_levels=(False, True), num_res_blocks=1, num_head_channels=8, "
                "norm_num_groups=8)",
                "(image(1, 16), torch.tensor([3, 7]))",
            ),
            Builder(
                "AutoencoderKL",
                "n.AutoencoderKL(spatial_dims=2, in_channels=1, out_channels=1, channels=(8, 16), "
                "latent_channels=4, attention_levels=(False, True), num_res_blocks=1, norm_num_groups=8)",
                "(image(1, 16),)",
            ),
        ),
    ),
)
