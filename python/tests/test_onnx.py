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


def test_command_line_export_and_its_errors(tmp_path):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "autoreg", "export-onnx", "--model", "default", "--grid", "16", "16", "16",
                          "--out", str(tmp_path / "m.onnx")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    onnx.checker.check_model(onnx.load(str(tmp_path / "m.onnx")))
    (tmp_path / "bad.autoreg").write_text("nothing\n")
    out = subprocess.run([sys.executable, "-m", "autoreg", "export-onnx", "--model", str(tmp_path / "bad.autoreg"),
                          "--out", str(tmp_path / "x.onnx")], capture_output=True, text=True)
    assert out.returncode == 2 and "bad.autoreg: not an autoreg model file" in out.stderr
    assert not (tmp_path / "x.onnx").exists()
