"""Shared fixtures: the build's command line (to compare with), small synthetic pairs."""
import os
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("AUTOREG_BUILD_DIR", ROOT / "build"))
CLI = BUILD / "bin" / "autoreg"


def run_cli(*args, check=True):
    result = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"autoreg {' '.join(map(str, args))} failed ({result.returncode}): {result.stderr}")
    return result


def blob_volume(shape=(24, 28, 32), centre=(12, 13, 16), radii=(6, 7, 8), seed=0):
    """A smooth ellipsoid with texture, indexed [k, j, i]."""
    k, j, i = np.meshgrid(*[np.arange(s, dtype=np.float32) for s in shape], indexing="ij")
    r = ((k - centre[0]) / radii[0]) ** 2 + ((j - centre[1]) / radii[1]) ** 2 + ((i - centre[2]) / radii[2]) ** 2
    rng = np.random.default_rng(seed)
    texture = rng.normal(0, 0.05, shape).astype(np.float32)
    return (100.0 / (1.0 + np.exp(4 * (r - 1))) + 20 * np.sin(i / 3.0) * (r < 1) + texture).astype(np.float32)


@pytest.fixture(scope="session")
def pair_files(tmp_path_factory):
    """A fixed and a moving image (.nii.gz written by SimpleITK) on an oblique,
    anisotropic grid, their label maps, and the geometry."""
    import SimpleITK as sitk

    folder = tmp_path_factory.mktemp("pair")
    angle = 0.2
    direction = [np.cos(angle), -np.sin(angle), 0, np.sin(angle), np.cos(angle), 0, 0, 0, 1]
    files = {}
    for name, centre in (("fixed", (12, 13, 16)), ("moving", (13, 12, 17.5))):
        array = blob_volume(centre=centre, seed=len(name))
        for kind, data in ((name, array), (name + "_labels", (array > 50).astype(np.int16) + (array > 90))):
            image = sitk.GetImageFromArray(data)
            image.SetSpacing((1.2, 1.0, 1.5))
            image.SetOrigin((-10.0, 4.0, 2.5))
            image.SetDirection(direction)
            path = folder / f"{kind}.nii.gz"
            sitk.WriteImage(image, str(path))
            files[kind] = path
    return files
