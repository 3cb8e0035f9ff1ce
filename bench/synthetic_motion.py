"""What the benches with a known answer share (liver_synthetic.py, ct_cbct_synthetic.py):
an image carried by a displacement field, fixed(x) = image(x + u(x)), so that the field
which registers the image onto the result is u exactly."""
import numpy as np
import torch


def sample(volume, u, mode="bilinear"):
    """volume(x + u(x)) for a D×H×W array and u (3×D×H×W, voxels, channel c along axis c;
    numpy or torch), trilinear ("bilinear") or nearest, border values outside."""
    d, h, w = volume.shape
    u = torch.as_tensor(u, dtype=torch.float32)
    grid = torch.stack(torch.meshgrid(torch.arange(d), torch.arange(h), torch.arange(w), indexing="ij")).float() + u
    norm = [2 * grid[a] / max(1, n - 1) - 1 for a, n in enumerate((d, h, w))]
    g = torch.stack([norm[2], norm[1], norm[0]], -1)[None]
    out = torch.nn.functional.grid_sample(torch.from_numpy(np.asarray(volume, np.float32)[None, None]), g, mode=mode,
                                          align_corners=True, padding_mode="border")
    return out[0, 0].numpy()
