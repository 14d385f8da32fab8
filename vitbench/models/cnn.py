"""CNNs: torchvision's ResNets as they are, generic ResNets from torchvision's blocks, the
slides' plain CNN."""

from __future__ import annotations

from torch import nn

from vitbench.specs import PlainCNNSpec, ResNetSpec


class GenericResNet(nn.Module):
    """A ResNet of any stem, stage count and widths, built from torchvision's own blocks, so that
    block internals (bias-free convolutions, v1.5 stride placement, 1x1 shortcuts) match it."""

    def __init__(self, spec: ResNetSpec):
        super().__init__()
        from torchvision.models.resnet import BasicBlock, Bottleneck

        block = BasicBlock if spec.block == "basic" else Bottleneck
        if spec.stem == "imagenet":
            stem_conv = nn.Conv2d(spec.in_chans, spec.stem_width, 7, 2, 3, bias=False)
        else:
            stem_conv = nn.Conv2d(spec.in_chans, spec.stem_width, 3, 1, 1, bias=False)
        stem: list[nn.Module] = [stem_conv, nn.BatchNorm2d(spec.stem_width), nn.ReLU(inplace=True)]
        if spec.stem == "imagenet":
            stem.append(nn.MaxPool2d(3, 2, 1))
        self.stem = nn.Sequential(*stem)
        in_c = spec.stem_width
        stages = []
        for index, (blocks, width) in enumerate(zip(spec.layers, spec.widths)):
            stride = 1 if index == 0 else 2
            out_c = width * block.expansion
            downsample = None
            if stride != 1 or in_c != out_c:
                downsample = nn.Sequential(
                    nn.Conv2d(in_c, out_c, 1, stride, bias=False), nn.BatchNorm2d(out_c)
                )
            layers = [block(in_c, width, stride, downsample)]
            layers += [block(out_c, width) for _ in range(1, blocks)]
            stages.append(nn.Sequential(*layers))
            in_c = out_c
        self.stages = nn.Sequential(*stages)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(in_c, spec.num_classes)

    def forward(self, x):
        x = self.avgpool(self.stages(self.stem(x)))
        return self.fc(x.flatten(1))


def build_resnet(spec: ResNetSpec) -> nn.Module:
    if spec.is_torchvision:
        from torchvision.models.resnet import BasicBlock, Bottleneck, ResNet

        block = BasicBlock if spec.block == "basic" else Bottleneck
        return ResNet(block, list(spec.layers), num_classes=spec.num_classes)
    return GenericResNet(spec)


def build_plain_cnn(spec: PlainCNNSpec) -> nn.Module:
    layers: list[nn.Module] = []
    in_c = spec.in_chans
    for channels in spec.stages:
        for out_c in channels:
            layers += [nn.Conv2d(in_c, out_c, 3, 1, 1), nn.ReLU()]
            in_c = out_c
        layers.append(nn.MaxPool2d(2, 2))
        if spec.batchnorm:
            layers.append(nn.BatchNorm2d(in_c))
    layers.append(nn.Flatten())
    features = spec.flat_features
    for out_f in spec.fc_dims:
        layers += [nn.Linear(features, out_f), nn.ReLU()]
        features = out_f
    layers.append(nn.Linear(features, spec.num_classes))
    return nn.Sequential(*layers)
