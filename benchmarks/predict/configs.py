"""The configurations of the time model's accuracy benchmark (``benchmarks/predict/accuracy.py``).

None of them is used to calibrate: calibration times only micro-benchmarks (matrix products,
convolutions, attention kernels and element-wise adds on a fixed grid of shapes), never a model.
They vary what a sweep varies: ViT patch, resolution, depth and width, the seeds' small models,
ResNets, Swin, ConvNeXt, a mobile CNN, timm and Hugging Face models; inference and training
(AdamW); batch 1 to 32.
"""

from __future__ import annotations

#: (model reference, mode, batch size)
CONFIGS: tuple[tuple[str, str, int], ...] = (
    # ViT presets and the sweep axes: patch, resolution, depth, width
    ("vit-ti/16", "infer", 1),
    ("vit-ti/16", "infer", 8),
    ("vit-ti/16", "train", 8),
    ("vit-s/16", "infer", 4),
    ("vit-s/16", "train", 4),
    ("vit-b/16", "infer", 1),
    ("vit-b/16", "infer", 8),
    ("vit-b/32", "infer", 16),
    ("vit-s/32", "infer", 32),
    ("vit-ti/8", "infer", 2),
    ("vit-s/8", "infer", 1),
    ("vit-ti/16+img_size=384", "infer", 4),
    ("vit-ti/16+img_size=96", "infer", 32),
    ("vit-ti/16+depth=4", "infer", 16),
    ("vit-s/16+depth=6", "train", 8),
    ("vit-ti/16+embed_dim=256+num_heads=4", "infer", 8),
    ("vit-b/16+depth=4+embed_dim=512+num_heads=8", "train", 2),
    ("vit-s/14", "infer", 2),
    # the seeds' small models
    ("cifar-vit/4", "infer", 32),
    ("cifar-vit/4", "train", 16),
    ("ablation-vit", "train", 32),
    ("ablation-vit-meanpool", "infer", 32),
    ("slides-vit", "train", 32),
    ("chapter-vit-tiny", "train", 16),
    ("mnist-vit", "train", 32),
    ("mnist-vit", "infer", 1),
    ("tutorial-vit-imagenette", "train", 8),
    # CNNs
    ("resnet18", "infer", 1),
    ("resnet18", "infer", 16),
    ("resnet18", "train", 4),
    ("resnet50", "infer", 4),
    ("resnet50", "train", 2),
    ("resnet34", "infer", 8),
    ("chapter-resnet-small", "train", 32),
    ("slides-cnn", "train", 32),
    # Swin, ConvNeXt, a mobile CNN (torchvision)
    ("torchvision:swin_t", "infer", 1),
    ("torchvision:swin_t", "infer", 8),
    ("torchvision:convnext_tiny", "infer", 4),
    ("torchvision:convnext_tiny", "train", 2),
    ("torchvision:mobilenet_v3_small", "infer", 32),
    # timm and Hugging Face
    ("timm:deit_tiny_patch16_224", "infer", 8),
    ("timm:vit_small_patch16_224", "train", 4),
    ("timm:convnext_atto", "infer", 16),
    ("timm:swin_tiny_patch4_window7_224", "train", 1),
    ("timm:resnet26d", "infer", 8),
    ("hf:vit", "infer", 2),
    ("hf:dinov2+num_hidden_layers=6", "infer", 4),
)
