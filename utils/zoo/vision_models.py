"""The zoo's torchvision models: torchvision's own classes, as ``torchvision.models`` builds them, with random
(seeded) weights and no download.  Where the named builder is large (ViT-B, Swin-T, ConvNeXt-T, DenseNet-121),
the same class is built at a small width and depth; the small conv nets are the builders themselves, on small
images.  torchvision is imported through utils/torchvision_cpu.py (registry.setup)."""
from __future__ import annotations

from .registry import Case, Entry, images


def _tv():
    import torchvision
    return torchvision.models


def _builder(name, size=32, batch=2, **kwargs):
    def factory():
        models = _tv()
        build = getattr(models, name, None) or getattr(models.segmentation, name)
        return Case(build(weights=None, **kwargs), (images(batch, size),))
    factory.__name__ = name
    return factory


def vit():
    from torchvision.models.vision_transformer import VisionTransformer
    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=32, mlp_dim=64,
                              num_classes=10)
    return Case(model, (images(2, 32),))


def swin():
    from torchvision.models.swin_transformer import SwinTransformer
    model = SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4],
                            stochastic_depth_prob=0.1, num_classes=10)
    return Case(model, (images(2, 32),))


def swin_v2():
    from torchvision.models.swin_transformer import SwinTransformer, SwinTransformerBlockV2, PatchMergingV2
    model = SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4],
                            block=SwinTransformerBlockV2, downsample_layer=PatchMergingV2, num_classes=10)
    return Case(model, (images(2, 32),))


def convnext():
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    settings = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1), CNBlockConfig(64, None, 1)]
    return Case(ConvNeXt(settings, stochastic_depth_prob=0.1, num_classes=10), (images(2, 32),))


def densenet():
    from torchvision.models.densenet import DenseNet
    model = DenseNet(growth_rate=8, block_config=(2, 2, 2), num_init_features=16, bn_size=2, num_classes=10)
    return Case(model, (images(2, 32),))


def regnet():
    from torchvision.models.regnet import BlockParams, RegNet
    params = BlockParams.from_init_params(depth=4, w_0=16, w_a=8.0, w_m=2.0, group_width=8, se_ratio=0.25)
    return Case(RegNet(params, num_classes=10), (images(2, 32),))


def fcn():
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.segmentation.fcn import FCN, FCNHead
    backbone = IntermediateLayerGetter(_tv().resnet18(weights=None), {"layer4": "out"})
    return Case(FCN(backbone, FCNHead(512, 4)), (images(1, 32),))


ENTRIES = [
    Entry("tv_resnet18", "torchvision", _builder("resnet18"), "basic blocks, in-place ReLU"),
    Entry("tv_resnet50", "torchvision", _builder("resnet50", batch=1), "bottlenecks, `out += identity`"),
    Entry("tv_mobilenet_v2", "torchvision", _builder("mobilenet_v2"), "inverted residuals, ReLU6"),
    Entry("tv_mobilenet_v3_small", "torchvision", _builder("mobilenet_v3_small"), "hardswish, squeeze-excitation"),
    Entry("tv_efficientnet_b0", "torchvision", _builder("efficientnet_b0"),
          "SiLU, SE, stochastic depth; Dropout(inplace=True) after flatten"),
    Entry("tv_regnet", "torchvision", regnet, "RegNetY-style: group convs, SE"),
    Entry("tv_convnext", "torchvision", convnext, "ConvNeXt class at width 16-64: LayerNorm2d, layer scale"),
    Entry("tv_swin", "torchvision", swin, "Swin class: shifted windows, relative position bias"),
    Entry("tv_swin_v2", "torchvision", swin_v2, "Swin V2 blocks: cosine attention, continuous position bias"),
    Entry("tv_vit", "torchvision", vit, "VisionTransformer class: nn.MultiheadAttention inside"),
    Entry("tv_densenet", "torchvision", densenet, "DenseNet class: growing concatenations"),
    Entry("tv_shufflenet_v2", "torchvision", _builder("shufflenet_v2_x0_5"), "channel shuffle, chunk"),
    Entry("tv_squeezenet", "torchvision", _builder("squeezenet1_1", size=64), "fire modules, ceil_mode pooling"),
    Entry("tv_mnasnet", "torchvision", _builder("mnasnet0_5"), "depthwise separable, BN momentum"),
    Entry("tv_googlenet", "torchvision", _builder("googlenet", size=64, aux_logits=False, init_weights=True),
          "inception blocks, transform_input"),
    Entry("tv_lraspp", "torchvision",
          _builder("lraspp_mobilenet_v3_large", size=64, batch=1, weights_backbone=None, num_classes=4),
          "segmentation: dict output, bilinear upsampling"),
    Entry("tv_fcn", "torchvision", fcn, "segmentation: FCN head on a ResNet-18 backbone, interpolate to input size"),
    Entry("tv_deeplabv3", "torchvision",
          _builder("deeplabv3_mobilenet_v3_large", size=64, batch=1, weights_backbone=None, num_classes=4),
          "segmentation: ASPP with global pooling branch"),
]
