"""MONAI's Warp with autoreg's fields: the module's output as MONAI's DDF, and LPS-mm
fields converted to DDFs (and back) on an oblique, anisotropic grid."""
import numpy as np
import torch
from monai.networks.blocks import Warp

import autoreg
from autoreg.images import Image
from autoreg.monai import ddf_from_field, field_from_ddf


def test_module_output_is_monai_ddf():
    g = torch.Generator().manual_seed(0)
    image = torch.rand(1, 1, 8, 9, 10, generator=g, dtype=torch.float64)
    u = (torch.rand(1, 3, 8, 9, 10, generator=g, dtype=torch.float64) - 0.5) * 3
    for padding in ("zeros", "border"):
        monai = Warp(mode="bilinear", padding_mode=padding)(image, u)
        torch.testing.assert_close(autoreg.ops.warp(image, u, "linear", padding), monai, atol=1e-10, rtol=0)


def oblique_grid():
    angle = 0.3
    direction = np.array([[np.cos(angle), 0, np.sin(angle)], [0, 1, 0], [-np.sin(angle), 0, np.cos(angle)]])
    return dict(spacing=(0.8, 1.1, 2.5), origin=(3.0, -2.0, 7.0), direction=direction)


def test_field_in_millimetres_to_ddf_and_back():
    rng = np.random.default_rng(0)
    field = Image(rng.normal(0, 2, (6, 7, 8, 3)).astype(np.float32), **oblique_grid())
    ddf = ddf_from_field(field)
    np.testing.assert_allclose(field_from_ddf(ddf, field), field.array, atol=1e-5)
    # one vector by hand: mm = direction · diag(spacing) · (u_i, u_j, u_k)
    k, j, i = 2, 3, 4
    u_kji = ddf[0, :, k, j, i].double().numpy()
    mm = np.asarray(field.direction) @ (np.asarray(field.spacing) * u_kji[::-1])
    np.testing.assert_allclose(mm, field.array[k, j, i], atol=1e-5)
    ijk = ddf_from_field(field, order="ijk")
    np.testing.assert_allclose(ijk[0, :, i, j, k].numpy(), u_kji[::-1], atol=1e-6)


def test_monai_warp_with_a_registered_field_gives_autoreg_apply():
    from conftest import blob_volume

    grid = oblique_grid()
    fixed = Image(blob_volume(), **grid)
    moving = Image(blob_volume(centre=(13, 12, 17)), **grid)
    r = autoreg.register(fixed, moving, iterations=[10, 5], affine=False)
    ddf = ddf_from_field(r.field).double()
    image = torch.from_numpy(moving.array).double()[None, None]
    monai = Warp(mode="bilinear", padding_mode="border")(image, ddf)[0, 0].numpy()
    ours = autoreg.apply(moving, r.field).array
    # where the field reads inside the volume (outside, autoreg reads 0 beyond half a voxel)
    size = torch.tensor(ddf.shape[2:], dtype=torch.float64).view(3, 1, 1, 1)
    base = torch.stack(torch.meshgrid(*[torch.arange(s, dtype=torch.float64) for s in ddf.shape[2:]], indexing="ij"))
    position = base + ddf[0]
    inside = ((position >= 0) & (position <= size - 1)).all(0).numpy()
    assert inside.mean() > 0.8
    np.testing.assert_allclose(monai[inside], ours[inside], atol=1e-3)


def test_the_worked_example_runs(tmp_path):
    """examples/python/monai_finetune.py, two steps (skipped without the OASIS data)."""
    import os
    import pathlib
    import subprocess
    import sys

    import pytest

    from conftest import ROOT

    data = pathlib.Path(os.environ.get("AUTOREG_TEST_DATA", ROOT.parent / "shared" / "data"))
    if not (data / "oasis_trt" / "oasis04_t1.nii.gz").exists():
        pytest.skip(f"no OASIS-TRT data in {data}")
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "monai_finetune.py"), "--data", str(data),
                          "--steps", "2", "--out", str(tmp_path / "tuned.autoreg")],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "validation Dice before fine-tuning" in out.stdout and "autoreg.register with it" in out.stdout
    assert (tmp_path / "tuned.autoreg").exists()
