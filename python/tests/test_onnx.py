"""The ONNX export runs in onnxruntime and agrees with the PyTorch module within 1e-4."""
import numpy as np
import onnx
import onnxruntime
import torch

import autoreg
from autoreg.onnx import OPSET

from test_network import inputs, perturbed


def test_default_model_in_onnxruntime(tmp_path):
    model = perturbed(autoreg.load_model("default"))
    grid = (32, 24, 28)
    path = autoreg.export_onnx(model, tmp_path / "model.onnx", grid=grid)
    proto = onnx.load(path)
    onnx.checker.check_model(proto)
    assert max(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")) == OPSET
    moving, fixed = inputs(grid)
    with torch.no_grad():
        expected = model(moving, fixed).numpy()
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {"moving": moving.numpy(), "fixed": fixed.numpy()})
    assert np.abs(expected).max() > 0.05
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)
