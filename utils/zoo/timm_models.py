"""The zoo's timm models: ``timm.create_model(name, pretrained=False, ...)`` (no download), with timm's own
keyword overrides for a small width/depth where the architecture takes them, else the model class built at a small
size.  Images are 32x32 (64x64 where the architecture's strides or attention biases need more)."""
from __future__ import annotations

from .registry import Case, Entry, images


def _create(name, size=32, batch=2, **kwargs):
    def factory():
        import timm
        return Case(timm.create_model(name, pretrained=False, num_classes=10, **kwargs), (images(batch, size),))
    factory.__name__ = name
    return factory


def _small_vit(**extra):
    return dict(img_size=32, patch_size=8, depth=2, embed_dim=32, num_heads=2, **extra)


def mixer():
    from timm.models.mlp_mixer import MlpMixer
    return Case(MlpMixer(num_classes=10, img_size=32, patch_size=8, num_blocks=2, embed_dim=32), (images(2, 32),))


def poolformer():
    """timm's ``poolformer_s12`` recipe (a MetaFormer with pooling token mixers, GroupNorm1) at depth 1 per stage."""
    import torch.nn as nn
    from timm.models.metaformer import GroupNorm1, MetaFormer
    model = MetaFormer(depths=[1, 1, 1, 1], dims=[16, 32, 48, 64], downsample_norm=None, mlp_act=nn.GELU,
                       mlp_bias=True, norm_layers=GroupNorm1, layer_scale_init_values=1e-5,
                       res_scale_init_values=None, use_mlp_head=False, num_classes=10)
    return Case(model, (images(2, 32),))


ENTRIES = [
    Entry("timm_vit", "timm", _create("vit_tiny_patch16_224", **_small_vit()), "class token, fused qkv, SDPA"),
    Entry("timm_deit_distilled", "timm", _create("deit_tiny_distilled_patch16_224", **_small_vit()),
          "class + distillation tokens, averaged heads in eval"),
    Entry("timm_beit", "timm", _create("beit_base_patch16_224", **_small_vit()), "relative position bias table"),
    Entry("timm_eva02", "timm", _create("eva02_tiny_patch14_224", img_size=28, depth=2, embed_dim=32, num_heads=2,
                                        size=28), "rotary embeddings, SwiGLU"),
    Entry("timm_cait", "timm", _create("cait_xxs24_224", depth_token_only=1, **_small_vit()),
          "talking-heads attention, class-attention layers"),
    Entry("timm_convnext", "timm", _create("convnext_atto", depths=(1, 1, 1, 1), dims=(16, 32, 48, 64)),
          "LayerNorm2d, depthwise 7x7, layer scale"),
    Entry("timm_efficientnet_b0", "timm", _create("efficientnet_b0"), "SiLU, squeeze-excitation, drop path"),
    Entry("timm_mobilenetv3", "timm", _create("mobilenetv3_small_050"), "hard-swish, SE, conv head"),
    Entry("timm_mobilevit", "timm", _create("mobilevit_xxs", size=64), "unfold into patches, transformer, fold"),
    Entry("timm_levit", "timm", _create("levit_128s", img_size=64, size=64), "attention biases, hard-swish"),
    Entry("timm_regnet", "timm", _create("regnetx_002"), "group convolutions"),
    Entry("timm_mixer", "timm", mixer, "MLP-Mixer class: token- and channel-mixing MLPs"),
    Entry("timm_swin", "timm", _create("swin_tiny_patch4_window7_224", img_size=32, window_size=4, depths=(2, 2),
                                       embed_dim=16, num_heads=(2, 4)), "shifted windows, channels-last"),
    Entry("timm_poolformer", "timm", poolformer, "MetaFormer with pooling token mixer"),
    Entry("timm_efficientformer", "timm", _create("efficientformer_l1", depths=(1, 1, 1, 2),
                                                  embed_dims=(16, 32, 48, 64), num_vit=1, size=224, batch=1),
          "4-D meta blocks then a 3-D attention block (its biases need 224x224 input)"),
    Entry("timm_resnest", "timm", _create("resnest14d"), "split attention, radix softmax"),
    Entry("timm_coatnet", "timm", _create("coatnet_nano_rw_224", img_size=64, size=64),
          "MBConv stages then relative-position transformer stages"),
    Entry("timm_edgenext", "timm", _create("edgenext_xx_small", size=64), "split depthwise transposed attention"),
    Entry("timm_ghostnet", "timm", _create("ghostnet_050"), "ghost modules: cheap operations, concat"),
]
