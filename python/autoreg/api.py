"""Registration, warping and evaluation from Python, in memory: the library behind the
command line (``autoreg register``, ``apply``, ``evaluate``), called without files or a
subprocess, the GIL released while it works."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np
import torch

from . import _autoreg
from .images import Image, like, to_field, to_image


@dataclass
class Registration:
    """What :func:`register` returns; images as the kind of the fixed image given."""

    warped: Any                  # the moving image on the fixed grid
    field: Any                   # fixed → moving displacement, LPS mm, on the fixed grid
    inverse: Any                 # with inverse=True: the map back, on the moving grid
    warped_labels: Any           # with moving_labels: the label map on the fixed grid
    affine: np.ndarray           # 4×4, fixed → moving physical points (LPS; identity without it)
    summary: dict                # what `autoreg register --json` prints


def _points(points) -> Optional[np.ndarray]:
    return None if points is None else np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)


def register(fixed, moving, *, inverse: bool = False, moving_labels=None, fixed_labels=None, fixed_mask=None,
             moving_mask=None, fixed_points=None, moving_points=None, threads: Optional[int] = None,
             progress: Optional[Callable[[str, int, int, int, float], None]] = None, **settings) -> Registration:
    """Registers ``moving`` to ``fixed`` as ``autoreg register`` does, with the same result
    for the same images, settings, seed and threads.

    Images: SimpleITK, ITK or nibabel images, :class:`autoreg.Image`, or numpy arrays
    (indexed [k, j, i], 1 mm, origin 0). Settings: the command line's options as keywords
    (listed below, from the settings table: booleans for the switches, lists for
    "70,20"), the preset first and the keywords given over it. The summary's
    ``warnings`` lists the failure checks that fired, as ``--json``'s. Points: N×3
    arrays of LPS mm (the summary gets their TRE). ``threads`` sets torch's intra-op
    threads (as --threads). ``progress(stage, level, step, steps, loss)`` is called
    from the optimisers. Raises autoreg.InputError (bad input), autoreg.SettingsError
    (bad settings) with the command line's messages.
    """
    if threads:
        torch.set_num_threads(int(threads))
    f, m = to_image(fixed), to_image(moving)
    extras: dict = {"inverse": bool(inverse)}
    for key, image, grid, dtype in (("moving_labels", moving_labels, m, np.int32), ("fixed_labels", fixed_labels, f, np.int32),
                                    ("fixed_mask", fixed_mask, f, np.float32), ("moving_mask", moving_mask, m, np.float32)):
        if image is not None:
            extras[key] = to_image(image, dtype).array
    if fixed_points is not None or moving_points is not None:
        extras["fixed_points"], extras["moving_points"] = _points(fixed_points), _points(moving_points)
        extras = {k: v for k, v in extras.items() if v is not None}
    r = _autoreg.register_arrays(f.array, f.geometry(), m.array, m.geometry(), settings, extras, progress)
    on_fixed = lambda a, vector=False: like(fixed, Image(a, f.spacing, f.origin, f.direction), vector)  # noqa: E731
    inverse_field = None
    if r["inverse"] is not None:
        inverse_field = like(moving, Image(r["inverse"], m.spacing, m.origin, m.direction), True)
    return Registration(warped=on_fixed(r["warped"]), field=on_fixed(r["field"], True), inverse=inverse_field,
                        warped_labels=None if r["warped_labels"] is None else on_fixed(r["warped_labels"]),
                        affine=r["affine"], summary=json.loads(r["summary"]))


def _settings_doc() -> str:
    """The settings table's rows (pipeline::setting_rows()) as the docstring's list."""
    lines = ["", "    Settings (keyword: the command line's option; its default; what it does):", ""]
    for row in _autoreg.settings_table():
        option = f"--{row['option']}" + ("" if not row["switch_sets"] else f" (sets {row['switch_sets']})")
        lines.append(f"    ``{row['keyword']}``: {option}; default {row['default'] or 'none'}; {row['help']}")
    return "\n".join(lines) + "\n"


if register.__doc__:  # not under python -OO
    register.__doc__ += _settings_doc()


def apply(moving, field, *, labels: bool = False):
    """``moving`` carried onto the field's grid (``autoreg apply``): each voxel x reads the
    moving image at x + field(x); linear, or nearest with ``labels``. Returned as the kind
    of ``moving``."""
    m = to_image(moving, np.int32 if labels else np.float32)
    u = to_field(field)
    out = _autoreg.apply_field(m.array, m.geometry(), u.array, u.geometry(), labels)
    return like(moving, Image(out, u.spacing, u.origin, u.direction))


def apply_points(points, field) -> np.ndarray:
    """Points of the fixed image (N×3, LPS mm) carried into the moving image:
    x + field(x) (``autoreg apply --points``)."""
    u = to_field(field)
    return _autoreg.move_points(_points(points), u.array, u.geometry())


def evaluate(*, field=None, fixed_labels=None, warped_labels=None, fixed_points=None, moving_points=None,
             labels=None) -> dict:
    """What ``autoreg evaluate --json`` reports, computed by the same code, with the same
    keys: with label maps (on one grid), ``labels`` (a list of ``{"label", "dice",
    "hd95_mm"}``, HD95 in mm, None for a label one map lacks), ``mean_dice`` and
    ``mean_hd95_mm``; with a field, ``non_positive_jacobian_percent`` and
    ``log_jacobian_std``; with landmarks (N×3, LPS mm, the same points in the same order),
    ``tre``: ``points``, ``before`` and, with a field, ``after`` (each ``mean_mm``,
    ``median_mm``, ``p95_mm``, ``max_mm``) and ``per_point_mm``. ``labels``: the labels
    to score (default: every label either map holds but 0)."""
    if (fixed_labels is None) != (warped_labels is None):
        raise ValueError("fixed_labels and warped_labels go together")
    if (fixed_points is None) != (moving_points is None):
        raise ValueError("fixed_points and moving_points go together")
    if fixed_labels is None and fixed_points is None and field is None:
        raise ValueError("nothing to evaluate: give label maps, landmarks or a field")
    a = to_image(fixed_labels, np.int32) if fixed_labels is not None else None
    b = to_image(warped_labels, np.int32) if warped_labels is not None else None
    u = to_field(field) if field is not None else None
    def parts(image):
        return (None, None) if image is None else (image.array, image.geometry())

    report = _autoreg.evaluate_arrays(*parts(a), *parts(b), [int(v) for v in (labels or [])], *parts(u),
                                      _points(fixed_points), _points(moving_points))
    return json.loads(report)


def model_inputs(fixed, moving, model: str = "default", affine=None) -> dict:
    """The network's inputs for a pair, as ``register --model`` prepares them: both
    images normalised (the model's percentiles) and sampled on the model frame of the
    fixed image (its grid, spacing and axes, centred on the fixed foreground), the moving
    image through ``affine`` (4×4 fixed → moving points, LPS) when given. Returns
    ``{"fixed", "moving"}`` as 1×1×D×H×W float32 tensors and ``"frame"``, the frame's
    geometry."""
    f, m = to_image(fixed), to_image(moving)
    r = _autoreg.model_inputs(f.array, f.geometry(), m.array, m.geometry(), os.fspath(model),
                              None if affine is None else np.asarray(affine, dtype=np.float64))
    return {"fixed": torch.from_numpy(r["fixed"]), "moving": torch.from_numpy(r["moving"]), "frame": r["frame"]}


def pack(manifest, out, *, grid=None, spacing: float = 2.0, unet: bool = False, cache=None,
         max_unreadable: float = 0.0) -> dict:
    """A manifest's train, val and atlas rows preprocessed as training does and written
    as one training set file ``out``, as ``autoreg pack`` does (the same library job, the
    keywords read by the rows its options come from: ``grid`` (D, H, W), ``spacing``,
    ``unet``, ``cache``, ``max_unreadable``, listed below). Returns the counts of training
    and validation subjects, whether an atlas is in it, the grid, the spacing and the
    file's size in bytes. A bad value raises autoreg.SettingsError with the command line's
    message.
    """
    settings = {"grid": None if grid is None else [int(g) for g in grid], "spacing": float(spacing), "unet": bool(unet),
                "cache": None if cache is None else os.fspath(cache), "max_unreadable": float(max_unreadable)}
    return _autoreg.pack(os.fspath(manifest), os.fspath(out), settings)


def _rows_doc(rows) -> str:
    """A job's rows (keyword, option, default, help) as a docstring's list."""
    lines = ["", "    Settings (keyword: the command line's option; its default; what it does):", ""]
    for row in rows:
        if not row["required"]:
            lines.append(f"    ``{row['keyword']}``: --{row['option']}; default {row['default'] or 'none'}; {row['help']}")
    return "\n".join(lines) + "\n"


if pack.__doc__:  # not under python -OO
    pack.__doc__ += _rows_doc(_autoreg.pack_rows())


def presets() -> dict:
    """The named settings of ``preset=`` and what each is for."""
    return _autoreg.presets()
