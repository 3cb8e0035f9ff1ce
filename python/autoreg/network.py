"""autoreg's registration networks written in PyTorch, rebuilt from a model file.

``load_model(path | "default")`` returns a :class:`RegistrationModel` (a
``torch.nn.Module``) whose parameters carry the C++ network's names, so that its
``state_dict`` is the model file's ``param/`` tensors. ``forward(moving, fixed)`` takes
two N×1×D×H×W float tensors on the model's grid (``model.grid``; intensities
normalised to [0, 1] as :func:`autoreg.preprocess` does) and returns the displacement
N×3×D×H×W in voxels of that grid, channel c along tensor dimension c (D, H, W):
``warp(moving, u)(x) = moving(x + u(x))`` ≈ fixed. See docs/python.md.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from . import ops
from .model_file import Archive, ModelFileError, read_archive, write_archive

# The candidate operations (docs/formats.md, "Networks"): name -> (separable, kernel, dilation).
OPERATIONS = {
    "conv_1x1": (False, 1, 1),
    "conv_3x3": (False, 3, 1),
    "conv_5x5": (False, 5, 1),
    "sep_conv_3x3": (True, 3, 1),
    "sep_conv_5x5": (True, 5, 1),
    "dil_conv_3x3": (False, 3, 2),
    "dil_conv_5x5": (False, 5, 2),
    "dil_conv_7x7": (False, 7, 2),
}


def _conv(cin: int, cout: int, kernel: int, stride: int = 1, dilation: int = 1, groups: int = 1) -> nn.Conv3d:
    return nn.Conv3d(cin, cout, kernel, stride=stride, padding=dilation * (kernel - 1) // 2,
                     dilation=dilation, groups=groups)


def make_edge(name: str, cin: int, cout: int, stride: int) -> nn.Sequential:
    """One edge: operation ``name`` then LeakyReLU(0.2) (index 0, or 0 and 1 when separable)."""
    if name not in OPERATIONS:
        raise ValueError(f"unknown operation '{name}' (known: {', '.join(OPERATIONS)})")
    separable, kernel, dilation = OPERATIONS[name]
    layers = [_conv(cin, cin, kernel, stride, dilation, groups=cin), _conv(cin, cout, 1)] if separable else \
        [_conv(cin, cout, kernel, stride, dilation)]
    return nn.Sequential(*layers, nn.LeakyReLU(0.2))


def flow_head(cin: int) -> nn.Conv3d:
    head = _conv(cin, 3, 3)
    nn.init.normal_(head.weight, 0.0, 1e-5)
    nn.init.zeros_(head.bias)
    return head


def upsample_field(u: torch.Tensor) -> torch.Tensor:
    """A displacement on a grid twice as fine (trilinear, half-pixel centres), in its voxels."""
    return F.interpolate(u, scale_factor=2, mode="trilinear", align_corners=False) * 2.0


class FeatureTransform(nn.Module):
    """y = γ ⊙ x + β per channel (the feature-wise transformation of `autoreg adapt --method ftm`)."""

    def __init__(self, channels: int):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(channels))
        self.beta = nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = (1, -1, 1, 1, 1)
        return torch.addcmul(self.beta.view(shape), x, self.gamma.view(shape))


@dataclass
class ModelInfo:
    """What a model file says about its network and its inputs (docs/formats.md)."""

    network: str = "autoreg"
    genotype: list[str] = field(default_factory=lambda: ["conv_3x3"] * 12)
    diffeomorphic: bool = True
    integration_steps: int = 7
    matching_cost: bool = True
    feature_transforms: bool = False
    grid: tuple[int, int, int] = (96, 96, 96)             # voxels along D, H, W
    spacing: tuple[float, float, float] = (2.0, 2.0, 2.0)  # mm along D, H, W
    normalization: tuple[float, float] = (0.5, 99.5)      # percentiles mapped to 0 and 1
    orientation: str = ""                                  # where voxel axes i, j, k point
    notes: dict[str, str] = field(default_factory=dict)


class RegistrationModel(nn.Module):
    """The contract both networks keep: ``forward(moving, fixed) -> u`` and
    ``forward_with_inverse(moving, fixed) -> (u, u_inverse)``."""

    size_multiple = 4

    def __init__(self, info: ModelInfo):
        super().__init__()
        self.info = info
        self.use_autoreg_ops = True  # False: the pure-PyTorch reference operators (ONNX export)

    def _ops(self):
        return ops if self.use_autoreg_ops and ops.loaded() else ops.reference

    def operations(self) -> list[tuple[str, int]]:
        raise NotImplementedError

    def add_feature_transforms(self) -> None:
        """Identity γ, β after every operation (`autoreg adapt --method ftm`); once only."""
        if hasattr(self, "ftm"):
            return
        device = next(self.parameters()).device
        self.ftm = nn.ModuleDict({name: FeatureTransform(c) for name, c in self.operations()}).to(device)
        self.info.feature_transforms = True

    def _transformed(self, name: str, x: torch.Tensor) -> torch.Tensor:
        return self.ftm[name](x) if hasattr(self, "ftm") else x

    def _check(self, moving: torch.Tensor, fixed: torch.Tensor) -> None:
        if moving.dim() != 5 or moving.shape[1] != 1 or moving.shape != fixed.shape:
            raise ValueError(f"the network takes moving and fixed images N×1×D×H×W of one size, "
                             f"got {tuple(moving.shape)} and {tuple(fixed.shape)}")
        if any(s <= 0 or s % self.size_multiple for s in moving.shape[2:]):
            raise ValueError(f"the network needs every spatial size to be a multiple of {self.size_multiple}, "
                             f"got {tuple(moving.shape[2:])}")

    def forward(self, moving: torch.Tensor, fixed: torch.Tensor) -> torch.Tensor:
        return self._run(moving, fixed, False)[0]

    def forward_with_inverse(self, moving: torch.Tensor, fixed: torch.Tensor):
        if not self.info.diffeomorphic:
            raise ValueError("this model's network is not diffeomorphic (its fields are not velocities), "
                             "so it has no inverse of its own")
        return self._run(moving, fixed, True)

    def _field(self, velocity: torch.Tensor) -> torch.Tensor:
        if not self.info.diffeomorphic:
            return velocity
        return self._ops().integrate(velocity, self.info.integration_steps)


class AutoRegNet(RegistrationModel):
    """The AutoReg cell network (docs/formats.md, "Networks"): a Siamese feature cell F,
    a deformation cell at 1/4 scale and one at 1/2 scale, each with a flow head."""

    EDGES = ["F0", "F1", "F2", "F3", "F4", "F5", "D4_0", "D4_1", "D4_2", "D2_0", "D2_1", "D2_2"]

    def __init__(self, info: ModelInfo):
        super().__init__(info)
        cost = 1 if info.matching_cost else 0
        coarse_in, fine_in = 32 + 32 + cost, 16 + 16 + 3 + 16 + cost
        self._layout = {  # edge: (in, out, stride)
            "F0": (1, 16, 2), "F1": (16, 16, 1), "F2": (16, 16, 1), "F3": (16, 32, 2), "F4": (32, 32, 1),
            "F5": (32, 32, 1), "D4_0": (coarse_in, 48, 1), "D4_1": (48, 32, 1), "D4_2": (32, 16, 1),
            "D2_0": (fine_in, 48, 1), "D2_1": (48, 32, 1), "D2_2": (32, 16, 1)}
        if len(info.genotype) != 12:
            raise ValueError(f"a genotype names 12 operations, got {len(info.genotype)}")
        # Registered in the C++ network's order, so that parameters() (and a saved file) match.
        for e in [0, 1, 2, 3, 4, 5, 6, 9, 7, 10, 8, 11]:
            name = self.EDGES[e]
            self.add_module(name, make_edge(info.genotype[e], *self._layout[name]))
        self.D4_flow = flow_head(16)
        self.D2_flow = flow_head(16)

    def operations(self):
        return [(name, self._layout[name][1]) for name in self.EDGES]

    def _edge(self, name: str, x: torch.Tensor) -> torch.Tensor:
        return self._transformed(name, getattr(self, name)(x))

    def _run(self, moving, fixed, inverse):
        self._check(moving, fixed)
        o = self._ops()
        n = moving.shape[0]
        x = torch.cat([moving, fixed], 0)
        for name in self.EDGES[:3]:
            x = self._edge(name, x)
        half = x
        for name in self.EDGES[3:6]:
            x = self._edge(name, x)
        m2, f2, m4, f4 = half[:n], half[n:], x[:n], x[n:]
        cost = [(m4 - f4).abs().mean(1, keepdim=True)] if self.info.matching_cost else []
        x = torch.cat([m4, f4] + cost, 1)
        for name in self.EDGES[6:9]:
            x = self._edge(name, x)
        coarse_velocity = self.D4_flow(x)
        coarse = upsample_field(self._field(coarse_velocity))
        x_up = F.interpolate(x, scale_factor=2, mode="trilinear", align_corners=False)
        m2_warped = o.warp(m2, coarse, "linear", "border")
        cost = [(m2_warped - f2).abs().mean(1, keepdim=True)] if self.info.matching_cost else []
        y = torch.cat([m2_warped, f2, coarse, x_up] + cost, 1)
        for name in self.EDGES[9:12]:
            y = self._edge(name, y)
        fine_velocity = self.D2_flow(y)
        # The fine field acts on the coarsely warped moving image: first fine, then coarse.
        u = upsample_field(o.compose(coarse, self._field(fine_velocity)))
        if not inverse:
            return u, None
        coarse_inverse = upsample_field(self._field(-coarse_velocity))
        return u, upsample_field(o.compose(self._field(-fine_velocity), coarse_inverse))


class UNet(RegistrationModel):
    """The VoxelMorph-style U-Net baseline (docs/formats.md, "Networks")."""

    size_multiple = 16

    def __init__(self, info: ModelInfo):
        super().__init__(info)
        enc, dec, rest = [16, 32, 32, 32], [32, 32, 32, 32], [32, 16, 16]
        self._operations = []
        channels = 2
        for level, c in enumerate(enc):
            self.add_module(f"enc{level}", make_edge("conv_3x3", channels, c, 1))
            self._operations.append((f"enc{level}", c))
            channels = c
        for level, c in enumerate(dec):
            self.add_module(f"dec{level}", make_edge("conv_3x3", channels, c, 1))
            self._operations.append((f"dec{level}", c))
            channels = c + enc[3 - level]
        for level, c in enumerate(rest):
            self.add_module(f"rest{level}", make_edge("conv_3x3", channels, c, 1))
            self._operations.append((f"rest{level}", c))
            channels = c
        self.flow = flow_head(channels)

    def operations(self):
        return list(self._operations)

    def _run(self, moving, fixed, inverse):
        self._check(moving, fixed)
        x = torch.cat([moving, fixed], 1)
        skips = []
        for level in range(4):
            x = self._transformed(f"enc{level}", getattr(self, f"enc{level}")(x))
            skips.append(x)
            x = F.max_pool3d(x, 2)
        for level in range(4):
            x = self._transformed(f"dec{level}", getattr(self, f"dec{level}")(x))
            x = torch.cat([F.interpolate(x, scale_factor=2, mode="nearest"), skips.pop()], 1)
        for level in range(3):
            x = self._transformed(f"rest{level}", getattr(self, f"rest{level}")(x))
        v = self.flow(x)
        if not self.info.diffeomorphic:
            return v, None
        half = F.interpolate(v, size=[s // 2 for s in v.shape[2:]], mode="trilinear", align_corners=False) * 0.5
        steps, o = self.info.integration_steps, self._ops()
        u = upsample_field(o.integrate(half, steps))
        return u, (upsample_field(o.integrate(-half, steps)) if inverse else None)


def build(info: ModelInfo) -> RegistrationModel:
    """A freshly initialised network for ``info``."""
    if info.network == "autoreg":
        model = AutoRegNet(info)
    elif info.network == "unet":
        model = UNet(info)
    else:
        raise ValueError(f"unknown network kind '{info.network}' (autoreg or unet)")
    if any(s % model.size_multiple for s in info.grid):
        raise ValueError(f"the {info.network} network needs grid sizes that are multiples of "
                         f"{model.size_multiple}, got {tuple(info.grid)}")
    if info.feature_transforms:
        model.info.feature_transforms = False
        model.add_feature_transforms()
    return model


def _numbers(text: str, count: int, key: str, path: str, kind=float):
    parts = text.split()
    try:
        values = [kind(p) for p in parts]
    except ValueError:
        values = []
    if len(values) != count:
        raise ModelFileError(f"{path}: field '{key}' should hold {count} numbers, got '{text}'")
    return values


def _flag(text: str, key: str, path: str) -> bool:
    if text not in ("0", "1"):
        raise ModelFileError(f"{path}: field '{key}' should be 0 or 1, got '{text}'")
    return text == "1"


def info_from_archive(a: Archive, path: str) -> ModelInfo:
    genotype = a.field("genotype", path).replace(",", " ").split()
    unknown = [g for g in genotype if g not in OPERATIONS]
    if len(genotype) != 12 or unknown:
        raise ModelFileError(f"{path}: genotype: 12 known operations expected, got '{a.field('genotype', path)}'")
    return ModelInfo(
        network=a.field("network", path),
        genotype=genotype,
        diffeomorphic=_flag(a.field("diffeomorphic", path), "diffeomorphic", path),
        integration_steps=_numbers(a.field("integration_steps", path), 1, "integration_steps", path, int)[0],
        matching_cost=_flag(a.field("matching_cost", path), "matching_cost", path),
        feature_transforms=_flag(a.field("feature_transforms", path), "feature_transforms", path)
        if a.has("feature_transforms") else False,
        grid=tuple(_numbers(a.field("grid", path), 3, "grid", path, int)),
        spacing=tuple(_numbers(a.field("spacing_mm", path), 3, "spacing_mm", path)),
        normalization=tuple(_numbers(a.field("normalization_percentiles", path), 2, "normalization_percentiles", path)),
        orientation=a.field("orientation", path) if a.has("orientation") else "",
        notes={k[5:]: v for k, v in a.fields if k.startswith("note.")})


def default_model_path() -> str:
    """The model shipped with autoreg, found by the library's own rule
    (pipeline/default_model.h: ``$AUTOREG_DEFAULT_MODEL``, else the package's copy)."""
    from . import _autoreg

    return _autoreg.default_model_path()


def resolve_model(path: str | os.PathLike) -> str:
    return default_model_path() if os.fspath(path) == "default" else os.fspath(path)


def load_model(path: str | os.PathLike = "default", device: str | torch.device = "cpu") -> RegistrationModel:
    """The network of a model file (or "default") as a PyTorch module, in eval mode."""
    path = resolve_model(path)
    archive = read_archive(path)
    info = info_from_archive(archive, path)
    try:
        model = build(info)
    except ValueError as e:
        raise ModelFileError(f"{path}: {e}") from None
    stored = {name[6:]: t for name, t in archive.tensors if name.startswith("param/")}
    params = dict(model.named_parameters())
    if len(stored) != len(params):
        raise ModelFileError(f"{path}: holds {len(stored)} weight tensors, its {info.network} network has {len(params)}")
    with torch.no_grad():
        for name, p in params.items():
            if name not in stored:
                raise ModelFileError(f"{path}: weight '{name}' is missing")
            if stored[name].shape != p.shape or stored[name].dtype != p.dtype:
                raise ModelFileError(f"{path}: weight '{name}' is {list(stored[name].shape)}, "
                                     f"its network needs {list(p.shape)}")
            p.copy_(stored[name])
    return model.eval().to(device)


def _fmt(v) -> str:
    return "%.17g" % float(v)  # as autoreg's C++ writes numbers (precision 17)


def save_model(path: str | os.PathLike, model: RegistrationModel, notes: dict[str, str] | None = None) -> None:
    """Writes ``model`` as an ``.autoreg`` file that `autoreg register --model` uses."""
    i = model.info
    fields = [("network", i.network), ("genotype", " ".join(i.genotype)),
              ("diffeomorphic", "1" if i.diffeomorphic else "0"), ("integration_steps", str(i.integration_steps)),
              ("matching_cost", "1" if i.matching_cost else "0"), ("grid", " ".join(str(int(g)) for g in i.grid)),
              ("spacing_mm", " ".join(_fmt(s) for s in i.spacing)),
              ("normalization_percentiles", " ".join(_fmt(p) for p in i.normalization))]
    if i.orientation:
        fields.append(("orientation", i.orientation))
    fmt = 2
    if hasattr(model, "ftm"):
        fields.append(("feature_transforms", "1"))
        fmt = 3
    for key, value in sorted({**i.notes, **(notes or {})}.items()):
        fields.append(("note." + key, str(value).replace("\n", " ").replace("\r", " ")))
    tensors = [("param/" + name, p.detach().float() if p.dtype == torch.float32 else p.detach())
               for name, p in model.named_parameters()]
    write_archive(path, Archive(kind="MODEL", format=fmt, fields=fields, tensors=tensors))
