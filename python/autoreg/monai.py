"""autoreg's fields in MONAI's conventions.

MONAI's ``monai.networks.blocks.Warp`` takes a dense displacement field (DDF) N×3×D×H×W
in voxels whose channel c moves along spatial dimension c of the image tensor, and
samples with ``grid_sample`` (align_corners=True for its "bilinear" mode): the
convention of autoreg's in-memory fields and of the PyTorch module's output, so a
module's output goes to ``Warp`` as it is. On disk and from :func:`autoreg.register`
fields are LPS millimetres on the fixed grid; :func:`ddf_from_field` and
:func:`field_from_ddf` convert, given the grid's geometry.

MONAI's image loaders (``LoadImage`` with ITK or nibabel readers) put spatial axes in
i, j, k order (channel-first ``C×I×J×K``), the reverse of autoreg's ``[k, j, i]``; the
functions take ``order="ijk"`` for DDFs on such tensors.
"""
from __future__ import annotations

import numpy as np
import torch

from .images import to_field


def _matrix(image) -> np.ndarray:
    """index (i, j, k) → LPS mm displacement: direction · diag(spacing)."""
    return np.asarray(image.direction, dtype=float).reshape(3, 3) * np.asarray(image.spacing, dtype=float)


def ddf_from_field(field, order: str = "kji") -> torch.Tensor:
    """A displacement field in LPS mm (any kind ``autoreg.register`` returns) as MONAI's
    DDF: 1×3×D×H×W voxels for tensors indexed [k, j, i] (``order="kji"``), or 1×3×I×J×K
    for MONAI's loaders' i, j, k tensors (``order="ijk"``)."""
    image = to_field(field)
    to_index = np.linalg.inv(_matrix(image))              # mm → (i, j, k) voxels
    ijk = np.einsum("ab,dhwb->adhw", to_index, image.array.astype(np.float64))  # 3×D×H×W, channels i, j, k
    if order == "kji":
        ddf = ijk[::-1]
    elif order == "ijk":
        ddf = ijk.transpose(0, 3, 2, 1)
    else:
        raise ValueError("order is 'kji' or 'ijk'")
    return torch.from_numpy(np.ascontiguousarray(ddf, dtype=np.float32)).unsqueeze(0)


def field_from_ddf(ddf: torch.Tensor, reference, order: str = "kji") -> np.ndarray:
    """MONAI's DDF (1×3×…, voxels, as ``order`` says) on the grid of ``reference`` (any
    image kind) as autoreg's field array D×H×W×3 in LPS mm (use
    ``autoreg.images.like(reference, Image(array, ...), vector=True)`` for an image)."""
    from .images import to_image

    image = to_image(reference)
    d = ddf.detach().cpu().double().numpy()[0]
    ijk = d[::-1] if order == "kji" else d.transpose(0, 3, 2, 1)
    return np.einsum("ab,bdhw->dhwa", _matrix(image), ijk).astype(np.float32)
