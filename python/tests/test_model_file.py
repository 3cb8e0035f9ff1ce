"""The model-file reader and writer (written from docs/formats.md) against autoreg's own."""
import pathlib

import pytest
import torch

import autoreg
from autoreg.model_file import ModelFileError, read_archive, write_archive
from autoreg.network import ModelInfo, build, save_model


def test_default_model_round_trips_byte_for_byte(tmp_path):
    path = autoreg.default_model_path()
    archive = read_archive(path)
    assert archive.field("network") == "autoreg"
    write_archive(tmp_path / "copy.autoreg", archive)
    assert (tmp_path / "copy.autoreg").read_bytes() == pathlib.Path(path).read_bytes()


def test_saved_module_is_the_file_autoreg_writes(tmp_path):
    # load_model then save_model rewrites the default model's bytes exactly: the same
    # fields in the same order, the weights in the C++ network's order.
    model = autoreg.load_model("default")
    save_model(tmp_path / "again.autoreg", model)
    assert (tmp_path / "again.autoreg").read_bytes() == pathlib.Path(autoreg.default_model_path()).read_bytes()


@pytest.mark.parametrize("damage, message", [
    (lambda b: b[:-10], "truncated"),
    (lambda b: b.replace(b"grid 80 80 96", b"grid 80 80 92"), "checksum"),
    (lambda b: b"not a model\n" + b, "not an autoreg model file"),
    (lambda b: b.replace(b"format 2", b"format 9"), "newer autoreg"),
])
def test_bad_files_are_refused_naming_the_file(tmp_path, damage, message):
    bad = tmp_path / "bad.autoreg"
    bad.write_bytes(damage(pathlib.Path(autoreg.default_model_path()).read_bytes()))
    with pytest.raises(ModelFileError, match=message) as error:
        autoreg.load_model(bad)
    assert str(bad) in str(error.value)


def test_weights_that_do_not_fit_are_refused(tmp_path):
    info = ModelInfo(grid=(32, 32, 32))
    model = build(info)
    model.info.genotype = ["conv_5x5"] + model.info.genotype[1:]  # the file says 5³, the weights are 3³
    save_model(tmp_path / "wrong.autoreg", model)
    with pytest.raises(ModelFileError, match="weight 'F0.0.weight'"):
        autoreg.load_model(tmp_path / "wrong.autoreg")
