"""The network as an ONNX model, for onnxruntime and other ONNX runtimes.

The export traces the PyTorch module with autoreg's operators replaced by their
``grid_sample`` versions (:class:`autoreg.ops.reference`), which ONNX expresses as
GridSample (opset 20, the first with volumetric grids); convolutions, LeakyReLU and
trilinear resizing are standard operators. Nothing is left out: the ONNX model maps
(moving, fixed), 1×1×D×H×W float32 on the model grid with intensities normalised
(:func:`autoreg.model_inputs`), to the displacement 1×3×D×H×W in voxels, as the module
does. Resampling onto the model frame and back to the fixed grid stays with the caller
(``autoreg.model_inputs``; the field is in the frame's voxels, channels along D, H, W).
"""
from __future__ import annotations

import os

import torch

from .network import RegistrationModel, load_model

OPSET = 20


class _Forward(torch.nn.Module):
    def __init__(self, model: RegistrationModel):
        super().__init__()
        self.model = model

    def forward(self, moving, fixed):
        return self.model(moving, fixed)


def export_onnx(model: RegistrationModel | str | os.PathLike, path: str | os.PathLike, grid=None,
                opset: int = OPSET) -> str:
    """Writes ``model`` (a module, a model file or "default") to ``path`` for inputs of
    ``grid`` (D, H, W; default the model's grid; any multiple of the network's size
    multiple). Returns the path."""
    if not isinstance(model, RegistrationModel):
        model = load_model(model)
    grid = tuple(grid or model.info.grid)
    example = torch.zeros((1, 1) + grid), torch.zeros((1, 1) + grid)
    previous, was_training = model.use_autoreg_ops, model.training
    model.use_autoreg_ops = False
    model.eval()
    path = os.fspath(path)
    tmp = os.path.join(os.path.dirname(os.path.abspath(path)), f".autoreg-tmp-{os.getpid()}-{os.path.basename(path)}")
    try:
        torch.onnx.export(_Forward(model), example, tmp, input_names=["moving", "fixed"],
                          output_names=["displacement"], opset_version=opset, dynamo=False)
        os.replace(tmp, path)  # whole or not at all
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
        model.use_autoreg_ops = previous
        model.train(was_training)
    return path
