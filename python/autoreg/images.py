"""The image kinds autoreg's Python functions take and give back.

Whatever the caller passes (a SimpleITK image, an ITK Python image, a nibabel image, an
:class:`Image`, or a bare numpy array) becomes an array indexed ``[k, j, i]`` (the order
of SimpleITK's ``GetArrayFromImage``) and a geometry in ITK's convention (spacing and
origin along i, j, k; direction row-major, column c = axis c; LPS millimetres), and
results go back as the same kind. A bare array means spacing 1 mm, origin 0, identity
direction. Displacement fields come back as vector images on the fixed grid whose
vectors are LPS millimetres (docs/formats.md): SimpleITK and ITK vector images, a
nibabel image of shape X×Y×Z×1×3 (NIfTI's vector intent, vectors in LPS as ITK and ANTs
write them), or an :class:`Image` whose array is D×H×W×3.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

_RAS = np.diag([-1.0, -1.0, 1.0])  # LPS <-> RAS


@dataclass
class Image:
    """A volume and its geometry: ``array[k, j, i]``; spacing, origin along i, j, k (mm,
    LPS); direction 3×3 (column c = where axis c points)."""

    array: np.ndarray
    spacing: tuple = (1.0, 1.0, 1.0)
    origin: tuple = (0.0, 0.0, 0.0)
    direction: np.ndarray = field(default_factory=lambda: np.eye(3))

    def geometry(self) -> dict:
        return {"spacing": [float(s) for s in self.spacing], "origin": [float(o) for o in self.origin],
                "direction": [float(d) for d in np.asarray(self.direction, dtype=float).reshape(9)]}


def _kind(image) -> str:
    if isinstance(image, Image):
        return "image"
    if isinstance(image, np.ndarray):
        return "numpy"
    module = type(image).__module__
    if module.startswith("SimpleITK"):
        return "sitk"
    if module.startswith("itk"):
        return "itk"
    if module.startswith("nibabel"):
        return "nibabel"
    raise TypeError(f"unsupported image type {type(image).__name__}: give a SimpleITK, ITK or nibabel image, "
                    "an autoreg.Image or a numpy array")


def to_image(image, dtype=np.float32) -> Image:
    """``image`` as an :class:`Image` (arrays copied to ``dtype``)."""
    kind = _kind(image)
    if kind == "image":
        return Image(np.ascontiguousarray(image.array, dtype=dtype), tuple(image.spacing), tuple(image.origin),
                     np.asarray(image.direction, dtype=float).reshape(3, 3))
    if kind == "numpy":
        return Image(np.ascontiguousarray(image, dtype=dtype))
    if kind == "sitk":
        import SimpleITK as sitk

        return Image(np.ascontiguousarray(sitk.GetArrayFromImage(image), dtype=dtype), image.GetSpacing(),
                     image.GetOrigin(), np.asarray(image.GetDirection()).reshape(3, 3))
    if kind == "itk":
        import itk

        return Image(np.ascontiguousarray(itk.array_from_image(image), dtype=dtype), tuple(image.GetSpacing()),
                     tuple(image.GetOrigin()), np.asarray(itk.array_from_matrix(image.GetDirection())).reshape(3, 3))
    # nibabel: voxel axes i, j, k first; the affine maps them to RAS mm.
    affine = np.asarray(image.affine, dtype=float)
    lps = _RAS @ affine[:3, :3]
    norms = np.linalg.norm(lps, axis=0)
    # the spacing as stored (pixdim, as ITK reads it), the direction from the affine
    zooms = image.header.get_zooms()[:3] if hasattr(image.header, "get_zooms") else norms
    spacing = np.asarray(zooms, dtype=np.float64)
    data = np.asanyarray(image.dataobj)
    if data.ndim != 3:
        raise ValueError(f"a 3-D image is needed, got shape {data.shape}")
    array = np.asarray(image.get_fdata(dtype=np.float32) if dtype == np.float32 else data).astype(dtype)
    return Image(np.ascontiguousarray(array.transpose(2, 1, 0)), tuple(spacing), tuple(_RAS @ affine[:3, 3]),
                 lps / norms)


def like(reference, image: Image, vector: bool = False):
    """``image`` as the kind of ``reference`` (``vector``: its array is D×H×W×3)."""
    kind = _kind(reference)
    if kind == "image":
        return image
    if kind == "numpy":
        return image.array
    if kind == "sitk":
        import SimpleITK as sitk

        out = sitk.GetImageFromArray(image.array, isVector=vector)
        out.SetSpacing([float(s) for s in image.spacing])
        out.SetOrigin([float(o) for o in image.origin])
        out.SetDirection([float(d) for d in np.asarray(image.direction).reshape(9)])
        return out
    if kind == "itk":
        import itk

        out = itk.image_from_array(image.array, is_vector=vector)
        out.SetSpacing([float(s) for s in image.spacing])
        out.SetOrigin([float(o) for o in image.origin])
        out.SetDirection(itk.matrix_from_array(np.asarray(image.direction, dtype=float).reshape(3, 3)))
        return out
    import nibabel as nib

    affine = np.eye(4)
    affine[:3, :3] = _RAS @ (np.asarray(image.direction).reshape(3, 3) * np.asarray(image.spacing))
    affine[:3, 3] = _RAS @ np.asarray(image.origin)
    if vector:
        data = image.array.transpose(2, 1, 0, 3)[:, :, :, None, :]
        out = nib.Nifti1Image(np.ascontiguousarray(data), affine)
        out.header.set_intent("vector")
        return out
    return nib.Nifti1Image(np.ascontiguousarray(image.array.transpose(2, 1, 0)), affine)


def to_field(field) -> Image:
    """A displacement field (any kind :func:`like` gives) as an :class:`Image` whose array
    is D×H×W×3 float32 (LPS mm)."""
    kind = _kind(field)
    if kind == "nibabel":
        data = np.asarray(field.dataobj, dtype=np.float32)
        if data.ndim == 5 and data.shape[3] == 1:
            data = data[:, :, :, 0, :]
        if data.ndim != 4 or data.shape[3] != 3:
            raise ValueError(f"a displacement field X×Y×Z×1×3 is needed, got shape {data.shape}")
        geometry = to_image(type(field)(np.zeros(data.shape[:3], np.float32), field.affine))
        return Image(np.ascontiguousarray(data.transpose(2, 1, 0, 3)), geometry.spacing, geometry.origin,
                     geometry.direction)
    image = to_image(field)
    if image.array.ndim != 4 or image.array.shape[3] != 3:
        raise ValueError(f"a displacement field D×H×W×3 is needed, got shape {image.array.shape}")
    return image
