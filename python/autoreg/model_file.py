"""Reading and writing autoreg model files (``.autoreg``), written from docs/formats.md.

Kept on purpose as a second reader, independent of the C++ one
(registration/networks/src/model_file.cpp): it is the executable form of the format's
specification, and python/tests/test_model_file.py holds the two together (the default
model, written by the C++ writer, is read here and written again byte for byte; damaged
files are refused with the C++ reader's messages), so a change to the format that the
document does not describe fails there.

A model file is a text header (``AUTOREG MODEL``, ``format N``, ``key value`` fields, one
``tensor`` line per weight, ``checksum``, ``data``) followed by the weights,
little-endian, in the order of the tensor lines. The checksum is FNV-1a 64 of the header
lines above it and then of the data (format 1: of the data alone).
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field

import numpy as np
import torch

_DTYPES = {
    "float32": (np.float32, torch.float32),
    "float64": (np.float64, torch.float64),
    "int64": (np.int64, torch.int64),
    "int32": (np.int32, torch.int32),
    "int16": (np.int16, torch.int16),
}
_NAMES = {torch_type: name for name, (_, torch_type) in _DTYPES.items()}
NEWEST_FORMAT = 3
# autoreg's FNV-1a starts from 1469598103934665603, not FNV's published offset basis
# 14695981039346656037 (a digit short: how the first model files were written, kept).
FNV_OFFSET = 1469598103934665603


class ModelFileError(ValueError):
    """A file that is not a readable autoreg model; the message starts with its path."""


def fnv1a(data: bytes, h: int = FNV_OFFSET) -> int:
    """FNV-1a 64 of ``data``, continuing from ``h``."""
    try:
        from . import _autoreg  # the C++ loop: a model's megabyte in a millisecond

        return _autoreg.fnv1a(data, h)
    except ImportError:
        for b in data:
            h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        return h


@dataclass
class Archive:
    """The header fields (in file order) and named tensors of a model file."""

    kind: str = "MODEL"
    format: int = 2
    fields: list[tuple[str, str]] = field(default_factory=list)
    tensors: list[tuple[str, torch.Tensor]] = field(default_factory=list)

    def field(self, key: str, path: str = "") -> str:
        for k, v in self.fields:
            if k == key:
                return v
        raise ModelFileError(f"{path}: the file has no '{key}' field")

    def has(self, key: str) -> bool:
        return any(k == key for k, _ in self.fields)


def read_archive(path: str | os.PathLike, kind: str = "MODEL") -> Archive:
    """Reads a model (or checkpoint) file; ModelFileError naming the file on any problem."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise ModelFileError(f"{path}: cannot open ({e.strerror})") from None

    def fail(what: str) -> ModelFileError:
        return ModelFileError(f"{path}: {what}")

    pos = 0

    def line() -> str | None:
        nonlocal pos
        end = blob.find(b"\n", pos)
        if end < 0:
            return None
        text = blob[pos:end].decode("utf-8", errors="replace")
        pos = end + 1
        return text

    first = line()
    if first is None or not first.startswith("AUTOREG "):
        raise fail(f"not an autoreg {'model' if kind == 'MODEL' else 'checkpoint'} file "
                   f"(it does not start with 'AUTOREG {kind}')")
    if first != "AUTOREG " + kind:
        raise fail(f"is an autoreg {first[8:]} file, not a {kind} file")
    version = line()
    if version is None or not version.startswith("format "):
        raise fail("no format version")
    try:
        fmt = int(version[7:])
    except ValueError:
        raise fail(f"unreadable format version '{version[7:]}'") from None
    if not 1 <= fmt <= NEWEST_FORMAT:
        newer = ": it was written by a newer autoreg" if fmt > NEWEST_FORMAT else ""
        raise fail(f"format version {fmt} is not one this autoreg reads ({NEWEST_FORMAT}){newer}")
    archive = Archive(kind=kind, format=max(fmt, 2))
    above = f"AUTOREG {kind}\nformat {fmt}\n"
    shapes: list[tuple[str, str, list[int]]] = []
    checksum, size = "", None
    while True:
        text = line()
        if text is None:
            raise fail("truncated: the header ends before its 'data' line")
        key, _, value = text.partition(" ")
        if key == "tensor":
            parts = value.split()
            try:
                name, dtype, ndim = parts[0], parts[1], int(parts[2])
                sizes = [int(s) for s in parts[3:]]
            except (IndexError, ValueError):
                raise fail(f"malformed tensor line '{text}'") from None
            if ndim != len(sizes) or not 0 <= ndim <= 8 or any(s < 0 for s in sizes):
                raise fail(f"malformed tensor line '{text}'")
            if dtype not in _DTYPES:
                raise fail(f"unknown tensor type '{dtype}'")
            shapes.append((name, dtype, sizes))
            above += text + "\n"
        elif key == "checksum":
            checksum = value
        elif key == "data":
            try:
                size = int(value)
            except ValueError:
                raise fail(f"malformed data line '{text}'") from None
            break
        else:
            if not key:
                raise fail(f"malformed header line '{text}'")
            archive.fields.append((key, value))
            above += text + "\n"
    expected = sum(int(np.prod(s, dtype=np.int64)) * np.dtype(_DTYPES[d][0]).itemsize for _, d, s in shapes)
    if expected != size:
        raise fail("the header's data size does not match its tensors")
    if len(blob) - pos < size:
        raise fail(f"truncated: {len(blob) - pos} of the header's {size} data bytes are there")
    if len(blob) - pos > size:
        raise fail("unexpected bytes after the data")
    data = blob[pos:]
    h = fnv1a(above.encode()) if fmt >= 2 else FNV_OFFSET
    if f"{fnv1a(data, h):016x}" != checksum:
        raise fail("corrupt: the data's checksum does not match the header's")
    offset = 0
    for name, dtype, sizes in shapes:
        np_type = _DTYPES[dtype][0]
        count = int(np.prod(sizes, dtype=np.int64))
        values = np.frombuffer(data, dtype=np.dtype(np_type).newbyteorder("<"), count=count, offset=offset)
        archive.tensors.append((name, torch.from_numpy(values.astype(np_type).reshape(sizes))))
        offset += values.nbytes
    return archive


def write_archive(path: str | os.PathLike, archive: Archive) -> None:
    """Writes ``archive`` as autoreg does: the same bytes for the same fields and tensors,
    through a temporary file renamed into place."""
    path = os.fspath(path)
    if not 2 <= archive.format <= NEWEST_FORMAT:
        raise ValueError(f"archive format {archive.format} is not written")
    header = f"AUTOREG {archive.kind}\nformat {archive.format}\n"
    for key, value in archive.fields:
        if not key or any(c in key for c in " \t\r\n") or "\n" in value:
            raise ValueError(f"archive: field '{key}' cannot be stored")
        header += f"{key} {value}\n"
    blobs = []
    for name, tensor in archive.tensors:
        t = tensor.detach().cpu().contiguous()
        if t.dtype not in _NAMES:
            raise ValueError(f"archive: tensor '{name}' is {t.dtype}; float32, float64, int64, int32 and int16 are stored")
        header += f"tensor {name} {_NAMES[t.dtype]} {t.dim()}" + "".join(f" {s}" for s in t.shape) + "\n"
        blobs.append(t.numpy().astype(t.numpy().dtype.newbyteorder("<"), copy=False).tobytes())
    h = fnv1a(header.encode())
    for b in blobs:
        h = fnv1a(b, h)
    header += f"checksum {h:016x}\ndata {sum(len(b) for b in blobs)}\n"
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".autoreg-tmp-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header.encode())
            for b in blobs:
                f.write(b)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
