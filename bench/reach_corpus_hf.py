"""The installed-package corpus's two Hugging Face packages (bench/reach_corpus.py says what a builder is):
transformers' model files by architecture and its public config classes at a tiny size, and diffusers' models.
"""

from __future__ import annotations

from reach_corpus_entry import IDS, Builder, Package

# transformers: a tiny size every decoder/encoder config below shares
LM = "vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4"
LM_KV = LM + ", num_key_value_heads=2, max_position_embeddings=64"
NO_CACHE = "dict(use_cache=False)"


TRANSFORMERS_ARCHS = (
    "llama",
    "gpt2",
    "bert",
    "t5",
    "vit",
    "mistral",
    "qwen2",
    "opt",
    "gpt_neox",
    "bart",
    "distilbert",
    "convnext",
    "resnet",
    "whisper",
    "mixtral",
    "phi",
    "gemma",
    "roberta",
    "swin",
    "falcon",
)

HF_PACKAGES = (
    Package(
        "transformers",
        "transformers",
        tuple(f"models/{a}/modeling_{a}.py" for a in TRANSFORMERS_ARCHS),
        (
            Builder("LlamaForCausalLM", f"m.LlamaForCausalLM(m.LlamaConfig({LM_KV}))", IDS, NO_CACHE),
            Builder(
                "GPT2LMHeadModel",
                "m.GPT2LMHeadModel(m.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=64))",
                IDS,
                NO_CACHE,
            ),
            Builder(
                "BertForSequenceClassification",
                f"m.BertForSequenceClassification(m.BertConfig({LM}, max_position_embeddings=64))",
                IDS,
            ),
            Builder(
                "T5ForConditionalGeneration",
                "m.T5ForConditionalGeneration(m.T5Config(vocab_size=100, d_model=32, "
                "d_kv=8, d_ff=64, num_layers=2, num_heads=4))",
                IDS,
                "dict(decoder_input_ids=ids(), use_cache=False)",
            ),
            Builder(
                "ViTForImageClassification",
                "m.ViTForImageClassification(m.ViTConfig(hidden_size=32, "
                "intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, image_size=32, patch_size=8))",
                "(image(),)",
            ),
            Builder("MistralForCausalLM", f"m.MistralForCausalLM(m.MistralConfig({LM_KV}))", IDS, NO_CACHE),
            Builder("Qwen2ForCausalLM", f"m.Qwen2ForCausalLM(m.Qwen2Config({LM_KV}))", IDS, NO_CACHE),
            Builder(
                "OPTForCausalLM",
                "m.OPTForCausalLM(m.OPTConfig(vocab_size=100, hidden_size=32, ffn_dim=64, "
                "num_hidden_layers=2, num_attention_heads=4, word_embed_proj_dim=32, max_position_embeddings=64))",
                IDS,
                NO_CACHE,
            ),
            Builder(
                "GPTNeoXForCausalLM",
                f"m.GPTNeoXForCausalLM(m.GPTNeoXConfig({LM}, max_position_embeddings=64))",
                IDS,
                NO_CACHE,
            ),
            Builder(
                "BartForConditionalGeneration",
                "m.BartForConditionalGeneration(m.BartConfig(vocab_size=100, "
                "d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, "
                "encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64))",
                IDS,
                "dict(decoder_input_ids=ids(), use_cache=False)",
            ),
            Builder(
                "DistilBertForMaskedLM",
                "m.DistilBertForMaskedLM(m.DistilBertConfig(vocab_size=100, dim=32, "
                "hidden_dim=64, n_layers=2, n_heads=4, max_position_embeddings=64))",
                IDS,
            ),
            Builder(
                "ConvNextForImageClassification",
                "m.ConvNextForImageClassification(m.ConvNextConfig("
                "hidden_sizes=[8, 16], depths=[1, 1], num_stages=2, image_size=32))",
                "(image(),)",
            ),
            Builder(
                "ResNetForImageClassification",
                "m.ResNetForImageClassification(m.ResNetConfig(embedding_size=8, "
                "hidden_sizes=[8, 16], depths=[1, 1], layer_type='bottleneck'))",
                "(image(),)",
            ),
            Builder(
                "WhisperForConditionalGeneration",
                "m.WhisperForConditionalGeneration(m.WhisperConfig("
                "vocab_size=100, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, "
                "decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=8, "
                "max_source_positions=16, max_target_positions=32, pad_token_id=1, bos_token_id=2, eos_token_id=3, "
                "decoder_start_token_id=2))",
                "(torch.randn(2, 8, 32),)",
                "dict(decoder_input_ids=ids(), use_cache=False)",
            ),
            Builder(
                "MixtralForCausalLM",
                f"m.MixtralForCausalLM(m.MixtralConfig({LM_KV}, num_local_experts=4, num_experts_per_tok=2))",
                IDS,
                NO_CACHE,
            ),
            Builder("GemmaForCausalLM", f"m.GemmaForCausalLM(m.GemmaConfig({LM_KV}, head_dim=8))", IDS, NO_CACHE),
            Builder(
                "RobertaForMaskedLM",
                f"m.RobertaForMaskedLM(m.RobertaConfig({LM}, max_position_embeddings=64, pad_token_id=1))",
                IDS,
            ),
            Builder(
                "SwinForImageClassification",
                "m.SwinForImageClassification(m.SwinConfig(image_size=32, patch_size=4, "
                "embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4))",
                "(image(),)",
            ),
            Builder(
                "FalconForCausalLM",
                "m.FalconForCausalLM(m.FalconConfig(vocab_size=100, hidden_size=32, "
                "num_hidden_layers=2, num_attention_heads=4))",
                IDS,
                NO_CACHE,
            ),
            Builder(
                "PhiForCausalLM", f"m.PhiForCausalLM(m.PhiConfig({LM}, max_position_embeddings=64))", IDS, NO_CACHE
            ),
        ),
    ),
    Package(
        "diffusers",
        "diffusers",
        ("models/**/*.py",),
        (
            Builder(
                "UNet2DModel",
                "m.UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1, "
                "block_out_channels=(16, 32), down_block_types=('DownBlock2D', 'AttnDownBlock2D'), "
                "up_block_types=('AttnUpBlock2D', 'UpBlock2D'), norm_num_groups=8, attention_head_dim=8)",
                "(torch.randn(2, 3, 16, 16), torch.tensor([3, 7]))",
            ),
            Builder(
                "UNet2DConditionModel",
                "m.UNet2DConditionModel(sample_size=16, in_channels=4, out_channels=4, "
                "layers_per_block=1, block_out_channels=(16, 32), down_block_types=('CrossAttnDownBlock2D', "
                "'DownBlock2D'), up_block_types=('UpBlock2D', 'CrossAttnUpBlock2D'), cross_attention_dim=16, "
                "attention_head_dim=8, norm_num_groups=8)",
                "(torch.randn(2, 4, 16, 16), torch.tensor([3, 7]), torch.randn(2, 6, 16))",
            ),
            Builder(
                "AutoencoderKL",
                "m.AutoencoderKL(in_channels=3, out_channels=3, block_out_channels=(16, 32), "
                "down_block_types=('DownEncoderBlock2D',) * 2, up_block_types=('UpDecoderBlock2D',) * 2, "
                "latent_channels=4, norm_num_groups=8, sample_size=16)",
                "(torch.randn(2, 3, 16, 16),)",
            ),
            Builder(
                "VQModel",
                "m.VQModel(in_channels=3, out_channels=3, block_out_channels=(16, 32), "
                "down_block_types=('DownEncoderBlock2D',) * 2, up_block_types=('UpDecoderBlock2D',) * 2, "
                "latent_channels=4, norm_num_groups=8, sample_size=16, num_vq_embeddings=32)",
                "(torch.randn(2, 3, 16, 16),)",
            ),
            Builder(
                "DiTTransformer2DModel",
                "m.DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=8, "
                "in_channels=4, num_layers=2, sample_size=8, patch_size=2, num_embeds_ada_norm=10, norm_num_groups=8)",
                "(torch.randn(2, 4, 8, 8),)",
                "dict(timestep=torch.tensor([3, 7]), class_labels=torch.tensor([1, 2]))",
            ),
            Builder(
                "SD3Transformer2DModel",
                "m.SD3Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, "
                "num_layers=2, attention_head_dim=8, num_attention_heads=2, joint_attention_dim=16, "
                "caption_projection_dim=16, pooled_projection_dim=16, out_channels=4, pos_embed_max_size=16)",
                "(torch.randn(2, 4, 8, 8),)",
                "dict(encoder_hidden_states=torch.randn(2, 6, 16), "
                "pooled_projections=torch.randn(2, 16), timestep=torch.tensor([3, 7]))",
            ),
            Builder(
                "FluxTransformer2DModel",
                "m.FluxTransformer2DModel(patch_size=1, in_channels=4, num_layers=1, "
                "num_single_layers=1, attention_head_dim=16, num_attention_heads=2, joint_attention_dim=16, "
                "pooled_projection_dim=16, axes_dims_rope=(4, 4, 8))",
                "(torch.randn(2, 16, 4),)",
                "dict(encoder_hidden_states=torch.randn(2, 6, 16), "
                "pooled_projections=torch.randn(2, 16), timestep=torch.tensor([3., 7.]), img_ids=torch.zeros(16, 3), "
                "txt_ids=torch.zeros(6, 3))",
            ),
            Builder(
                "ControlNetModel",
                "m.ControlNetModel(in_channels=4, layers_per_block=1, block_out_channels=(16, 32), "
                "down_block_types=('CrossAttnDownBlock2D', 'DownBlock2D'), cross_attention_dim=16, "
                "attention_head_dim=8, "
                "norm_num_groups=8, conditioning_embedding_out_channels=(8, 16))",
                "(torch.randn(2, 4, 16, 16), torch.tensor([3, 7]), torch.randn(2, 6, 16), torch.randn(2, 3, 32, 32))",
            ),
            Builder(
                "AutoencoderTiny",
                "m.AutoencoderTiny(encoder_block_out_channels=(8, 8, 8, 8), "
                "decoder_block_out_channels=(8, 8, 8, 8), num_encoder_blocks=(1, 1, 1, 1), "
                "num_decoder_blocks=(1, 1, 1, 1), latent_channels=4)",
                "(torch.randn(2, 3, 32, 32),)",
            ),
            Builder(
                "PriorTransformer",
                "m.PriorTransformer(num_attention_heads=2, attention_head_dim=8, num_layers=2, "
                "embedding_dim=16, num_embeddings=4, additional_embeddings=4)",
                "(torch.randn(2, 16), torch.tensor([3, 7]), torch.randn(2, 16))",
                "dict(encoder_hidden_states=torch.randn(2, 4, 16))",
            ),
            Builder(
                "PixArtTransformer2DModel",
                "m.PixArtTransformer2DModel(num_attention_heads=2, attention_head_dim=8, "
                "in_channels=4, out_channels=8, num_layers=2, sample_size=8, patch_size=2, cross_attention_dim=16, "
                "caption_channels=16, norm_num_groups=8)",
                "(torch.randn(2, 4, 8, 8),)",
                "dict(encoder_hidden_states=torch.randn(2, 6, 16), timestep=torch.tensor([3, 7]), "
                "added_cond_kwargs={'resolution': None, 'aspect_ratio': None})",
            ),
            Builder(
                "SanaTransformer2DModel",
                "m.SanaTransformer2DModel(in_channels=4, out_channels=4, "
                "num_attention_heads=2, attention_head_dim=8, num_layers=2, num_cross_attention_heads=2, "
                "cross_attention_head_dim=8, cross_attention_dim=16, caption_channels=16, sample_size=8, patch_size=2)",
                "(torch.randn(2, 4, 8, 8), torch.randn(2, 6, 16), torch.tensor([3, 7]))",
            ),
            Builder(
                "WanTransformer3DModel",
                "m.WanTransformer3DModel(patch_size=(1, 2, 2), num_attention_heads=2, "
                "attention_head_dim=8, in_channels=4, out_channels=4, text_dim=16, freq_dim=16, ffn_dim=32, "
                "num_layers=2, rope_max_seq_len=32)",
                "(torch.randn(2, 4, 2, 8, 8), torch.tensor([3, 7]), torch.randn(2, 6, 16))",
            ),
        ),
    ),
)
