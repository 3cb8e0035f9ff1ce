"""autoreg's fused volume operators in PyTorch: ``torch.ops.autoreg.*``.

``import autoreg`` loads ``libautoreg_ops.so`` (C++ CPU kernels, CUDA kernels through
its plugin, autograd), which registers ``torch.ops.autoreg.warp``, ``compose``,
``integrate`` and ``jacobian_determinant`` with the dispatcher; this module adds their
fake (meta) implementations so that ``torch.compile`` and ``torch.export`` trace them,
and :mod:`autoreg.ops.reference`, the same operators written with ``grid_sample`` (what
the ONNX export uses, and the tests compare against).

Conventions (docs/formats.md): volumes N×C×D×H×W; a displacement N×3×D×H×W in voxels,
channel c along tensor dimension c; ``warp(image, u)(x) = image(x + u(x))``.
"""
from __future__ import annotations

import os

import torch
import torch.nn.functional as F

_LIBRARY = os.path.join(os.path.dirname(__file__), "lib", "libautoreg_ops.so")
_loaded = False


def library_path() -> str:
    return os.environ.get("AUTOREG_OPS_LIBRARY", _LIBRARY)


def load() -> None:
    """Loads the operators' library once (``import autoreg`` does)."""
    global _loaded
    if _loaded:
        return
    torch.ops.load_library(library_path())
    # The CUDA kernels live in a plugin beside the library (docs/operators.md); loaded
    # only where a GPU is, as the command line does.
    plugin = os.path.join(os.path.dirname(library_path()), "libautoreg_cuda.so")
    if torch.cuda.is_available() and os.path.exists(plugin):
        torch.ops.load_library(plugin)
    _register_fakes()
    _loaded = True


def loaded() -> bool:
    return _loaded


def _register_fakes() -> None:
    """Shapes without computing (torch.compile, torch.export, meta tensors)."""
    torch.library.register_fake("autoreg::warp")(
        lambda image, displacement, interpolation="linear", padding="zeros": image.new_empty(image.shape))
    torch.library.register_fake("autoreg::_warp_backward")(
        lambda grad, image, displacement, interpolation, padding, output_mask:
        (image.new_empty(image.shape), displacement.new_empty(displacement.shape)))
    torch.library.register_fake("autoreg::compose")(lambda u, v: v.new_empty(v.shape))
    torch.library.register_fake("autoreg::_warp_mse")(
        lambda image, target, displacement, weight, padding, with_grad:
        (displacement.new_empty(()), displacement.new_empty(displacement.shape)))


def warp(image: torch.Tensor, displacement: torch.Tensor, interpolation: str = "linear",
         padding: str = "zeros") -> torch.Tensor:
    """image(x + u(x)): ``interpolation`` linear or nearest, ``padding`` zeros or border."""
    return torch.ops.autoreg.warp(image, displacement, interpolation, padding)


def compose(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The displacement of applying v, then u: v(x) + u(x + v(x))."""
    return torch.ops.autoreg.compose(u, v)


def integrate(velocity: torch.Tensor, steps: int = 7) -> torch.Tensor:
    """Scaling and squaring: ``steps`` self-compositions of velocity / 2^steps."""
    return torch.ops.autoreg.integrate(velocity, steps)


def jacobian_determinant(displacement: torch.Tensor) -> torch.Tensor:
    """det(I + ∂u/∂x) per voxel (N×1×D×H×W), central differences, one-sided on the faces."""
    return torch.ops.autoreg.jacobian_determinant(displacement)


class reference:  # noqa: N801 - a namespace
    """The operators in plain PyTorch (``grid_sample``, align_corners=True): slower, and
    exportable to ONNX (GridSample, opset 20)."""

    @staticmethod
    def sampling_grid(displacement: torch.Tensor) -> torch.Tensor:
        """x + u(x) as ``grid_sample``'s normalised N×D×H×W×3 grid (x, y, z = W, H, D)."""
        sizes = displacement.shape[2:]
        axes = [torch.arange(s, dtype=displacement.dtype, device=displacement.device) for s in sizes]
        base = torch.stack(torch.meshgrid(*axes, indexing="ij"), 0).unsqueeze(0)
        position = base + displacement
        scale = torch.tensor([2.0 / max(s - 1, 1) for s in sizes], dtype=displacement.dtype,
                             device=displacement.device).view(1, 3, 1, 1, 1)
        normalised = position * scale - 1.0
        return normalised.flip(1).permute(0, 2, 3, 4, 1)

    @staticmethod
    def warp(image, displacement, interpolation="linear", padding="zeros"):
        mode = {"linear": "bilinear", "nearest": "nearest"}[interpolation]
        return F.grid_sample(image, reference.sampling_grid(displacement), mode=mode, padding_mode=padding,
                             align_corners=True)

    @staticmethod
    def compose(u, v):
        return v + reference.warp(u, v, "linear", "border")

    @staticmethod
    def integrate(velocity, steps=7):
        u = velocity * (2.0 ** -steps)
        for _ in range(steps):
            u = reference.compose(u, u)
        return u
