"""RT Structure Sets (RTSTRUCT), the radiotherapy clinic's contours, as numpy masks.

:func:`read_contours` fills every structure of a structure set on the grid of the DICOM
series it is drawn on (the even-odd rule of the standard: a contour inside another is a
hole); :func:`write_contours` contours masks on a series' grid slice by slice and writes
them as a new structure set on that series (new UIDs, the series' patient, study and frame
of reference, every contour referencing its slice, unapproved), as
``autoreg register --out-contours`` does (docs/radiotherapy.md). Arrays are indexed
``[k, j, i]`` like every autoreg array.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from . import _autoreg
from .images import Image


@dataclass
class Structure:
    """One structure (ROI): its number and name, its colour (RGB 0-255) and its mask on
    the series' grid (``bool``, ``[k, j, i]``)."""

    number: int
    name: str
    mask: np.ndarray
    colour: tuple = (255, 0, 0)
    interpreted_type: str = ""


@dataclass
class StructureSet:
    """The structures of an RT Structure Set filled on its series' grid."""

    structures: List[Structure]
    spacing: tuple
    origin: tuple
    direction: np.ndarray
    label: str = ""
    notes: List[str] = field(default_factory=list)

    def __getitem__(self, name: str) -> Structure:
        for s in self.structures:
            if s.name == name:
                return s
        raise KeyError(f"no structure named {name!r}: {', '.join(s.name for s in self.structures)}")

    def names(self) -> List[str]:
        return [s.name for s in self.structures]

    def label_map(self) -> Image:
        """The structures as one label map (int32, each its ROI number) on the series' grid;
        where structures overlap, the smaller one's number (an organ inside the body's
        outline keeps its voxels)."""
        shape = self.structures[0].mask.shape if self.structures else (0, 0, 0)
        labels = np.zeros(shape, np.int32)
        for s in sorted(self.structures, key=lambda s: -int(s.mask.sum())):
            labels[s.mask] = s.number
        return Image(labels, self.spacing, self.origin, self.direction)


def read_contours(rtstruct, series) -> StructureSet:
    """The structure set ``rtstruct`` (a .dcm file) filled on the grid of ``series``, the
    folder of the DICOM series it is drawn on (its frame of reference is checked). Raises
    :class:`autoreg.InputError` naming the file and object at fault."""
    structures, grid, label = _autoreg.read_structures(os.fspath(rtstruct), os.fspath(series))
    return StructureSet(
        [Structure(s["number"], s["name"], s["mask"].astype(bool), tuple(s["colour"]), s["interpreted_type"])
         for s in structures],
        tuple(grid["spacing"]), tuple(grid["origin"]), np.asarray(grid["direction"], float).reshape(3, 3), label)


def _structures_of(structures, names: Optional[Dict[int, str]]):
    if isinstance(structures, StructureSet):
        return structures.structures
    if isinstance(structures, (list, tuple)) and all(isinstance(s, Structure) for s in structures):
        return list(structures)
    labels = structures.array if isinstance(structures, Image) else np.asarray(structures)
    if not np.issubdtype(labels.dtype, np.integer):
        raise TypeError("give a StructureSet, a list of Structure, or an integer label map with names")
    values = [int(v) for v in np.unique(labels) if v != 0]
    names = names or {}
    return [Structure(v, names.get(v, f"label {v}"), labels == v) for v in values]


def write_contours(path, structures, series, *, names: Optional[Dict[int, str]] = None, description: str = "") -> int:
    """Writes ``structures`` as a new RT Structure Set at ``path`` on the DICOM series in the
    folder ``series``: a :class:`StructureSet`, a list of :class:`Structure`, or an
    integer label map on the series' grid (an array ``[k, j, i]`` or an
    :class:`autoreg.Image`) with ``names`` ``{label: name}`` (default ``"label N"``).
    Each mask is contoured on every slice (marching squares at one half). Returns the
    number of contours written; written atomically."""
    items = [{"number": int(s.number), "name": str(s.name), "colour": [int(c) for c in s.colour],
              "interpreted_type": s.interpreted_type, "mask": np.ascontiguousarray(s.mask, np.uint8)}
             for s in _structures_of(structures, names)]
    return _autoreg.write_structures(os.fspath(path), items, os.fspath(series), description)
