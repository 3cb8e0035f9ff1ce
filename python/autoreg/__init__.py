"""autoreg: deformable registration of 3D medical volumes with searched networks.

- ``autoreg.register(fixed, moving, **options)``: the command line's registration in
  memory, on SimpleITK, ITK, nibabel or numpy images (:mod:`autoreg.api`);
- ``autoreg.load_model(path | "default")``: the network as a ``torch.nn.Module``
  (:mod:`autoreg.network`), ``autoreg.save_model`` the other way;
- ``torch.ops.autoreg.*`` (warp, compose, integrate, jacobian_determinant), loaded on
  import (:mod:`autoreg.ops`);
- ``autoreg.export_onnx`` (:mod:`autoreg.onnx`), MONAI's conventions (:mod:`autoreg.monai`).

See docs/python.md.
"""
import torch as _torch  # LibTorch first: the libraries below link against it

from . import ops
from .model_file import ModelFileError

ops.load()

from ._autoreg import InputError, SettingsError  # noqa: E402
from .api import Registration, apply, apply_points, evaluate, model_inputs, pack, presets, register  # noqa: E402
from .contours import Structure, StructureSet, read_contours, write_contours  # noqa: E402
from .images import Image  # noqa: E402
from .network import ModelInfo, RegistrationModel, default_model_path, load_model, save_model  # noqa: E402

__version__ = "0.1.0"

__all__ = ["Image", "InputError", "ModelFileError", "ModelInfo", "Registration", "RegistrationModel", "SettingsError",
           "Structure", "StructureSet", "apply", "apply_points", "default_model_path", "evaluate", "export_onnx",
           "load_model", "model_inputs", "ops", "pack", "presets", "read_contours", "register", "save_model",
           "write_contours"]


def export_onnx(*args, **kwargs):
    """See :func:`autoreg.onnx.export_onnx`."""
    from .onnx import export_onnx as export

    return export(*args, **kwargs)
