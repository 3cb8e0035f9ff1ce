"""The PyTorch module equals the C++ network: the default model, a searched genotype,
the U-Net and an adapted model (feature-wise transformations), forward and inverse;
and a module saved from PyTorch is what `autoreg register --model` uses."""
import json

import numpy as np
import pytest
import torch

import autoreg
from autoreg import _autoreg
from autoreg.network import ModelInfo, build, save_model

from conftest import run_cli

TOLERANCE = 2e-4  # voxels: float32 sums in another order (oneDNN's convolutions in C++)


def perturbed(model, flow=0.02):
    """Flow heads with weights large enough that the fields are not near zero."""
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "flow" in name and name.endswith("weight"):
                p.normal_(0.0, flow)
            if name.endswith(".gamma"):
                p.add_(0.1 * torch.randn_like(p))
            if name.endswith(".beta"):
                p.add_(0.05 * torch.randn_like(p))
    return model


def inputs(shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    smooth = torch.nn.functional.avg_pool3d(torch.rand((2, 1) + shape, generator=g), 5, 1, 2)
    return smooth[:1].contiguous(), smooth[1:].contiguous()


def compare(path, shape, inverse):
    model = autoreg.load_model(path)
    moving, fixed = inputs(shape)
    with torch.no_grad():
        python = model.forward_with_inverse(moving, fixed) if inverse else (model(moving, fixed), None)
    cxx = _autoreg.network_forward(str(path), moving.numpy(), fixed.numpy(), inverse)
    assert python[0].abs().max() > 0.05  # a field worth comparing
    np.testing.assert_allclose(python[0].numpy(), cxx[0], atol=TOLERANCE, rtol=0)
    if inverse:
        np.testing.assert_allclose(python[1].numpy(), cxx[1], atol=TOLERANCE, rtol=0)


@pytest.mark.parametrize("inverse", [False, True])
def test_default_model(tmp_path, inverse):
    save_model(tmp_path / "m.autoreg", perturbed(autoreg.load_model("default")))
    compare(tmp_path / "m.autoreg", (24, 32, 28), inverse)


def test_searched_genotype(tmp_path):
    genotype = ["sep_conv_3x3", "dil_conv_3x3", "conv_5x5", "sep_conv_5x5", "dil_conv_5x5", "conv_1x1",
                "dil_conv_7x7", "conv_3x3", "conv_1x1", "sep_conv_3x3", "conv_5x5", "dil_conv_3x3"]
    save_model(tmp_path / "g.autoreg", perturbed(build(ModelInfo(genotype=genotype, grid=(32, 32, 32)))))
    compare(tmp_path / "g.autoreg", (20, 24, 16), True)


def test_unet(tmp_path):
    save_model(tmp_path / "u.autoreg", perturbed(build(ModelInfo(network="unet", grid=(32, 32, 32))), flow=0.3))
    compare(tmp_path / "u.autoreg", (32, 16, 32), True)


def test_adapted_model(tmp_path):
    model = autoreg.load_model("default")
    model.add_feature_transforms()
    save_model(tmp_path / "a.autoreg", perturbed(model))
    assert b"format 3" in (tmp_path / "a.autoreg").read_bytes()[:40]
    compare(tmp_path / "a.autoreg", (24, 24, 24), False)


def test_not_diffeomorphic_has_no_inverse():
    model = build(ModelInfo(diffeomorphic=False, grid=(16, 16, 16)))
    with pytest.raises(ValueError, match="not diffeomorphic"):
        model.forward_with_inverse(*inputs((16, 16, 16)))


def test_fine_tuned_in_pytorch_then_registered_by_the_command_line(tmp_path, pair_files):
    model = autoreg.load_model("default").train()
    moving, fixed = inputs((24, 24, 24))
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(2):  # a few steps of someone's training loop
        u = model(moving, fixed)
        loss = (autoreg.ops.warp(moving, u) - fixed).pow(2).mean() + 0.01 * u.pow(2).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    save_model(tmp_path / "tuned.autoreg", model, notes={"tuned": "pytest"})
    reloaded = autoreg.load_model(tmp_path / "tuned.autoreg")
    for (name, a), (_, b) in zip(model.named_parameters(), reloaded.named_parameters()):
        assert torch.equal(a, b), name
    summary = json.loads(run_cli(
        "register", "--fixed", pair_files["fixed"], "--moving", pair_files["moving"], "--model", tmp_path / "tuned.autoreg",
        "--out-warped", tmp_path / "w.nii.gz", "--out-field", tmp_path / "f.nii.gz", "--json").stdout)
    assert summary["model"] == str(tmp_path / "tuned.autoreg")
    assert summary["settings"]["deformable"] == "model"
