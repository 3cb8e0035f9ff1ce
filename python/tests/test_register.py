"""autoreg.register on each image kind gives the command line's result bit for bit
(same settings, seed and threads); bad input and bad settings raise with the command
line's messages; apply, apply_points and evaluate."""
import json

import numpy as np
import pytest
import torch

import autoreg

from conftest import run_cli

SETTINGS = ["--iterations", "20,10", "--affine-iterations", "30,20", "--seed", "3", "--threads", "2"]
KEYWORDS = dict(iterations=[20, 10], affine_iterations=[30, 20], seed=3, threads=2)


@pytest.fixture(scope="module")
def cli_result(pair_files, tmp_path_factory):
    import SimpleITK as sitk

    out = tmp_path_factory.mktemp("cli")
    summary = json.loads(run_cli(
        "register", "--fixed", pair_files["fixed"], "--moving", pair_files["moving"],
        "--moving-labels", pair_files["moving_labels"], "--out-labels", out / "labels.nii.gz",
        "--out-warped", out / "warped.nii.gz", "--out-field", out / "field.nii.gz",
        "--out-inverse-field", out / "inverse.nii.gz", "--json", *SETTINGS).stdout)
    read = lambda name: sitk.GetArrayFromImage(sitk.ReadImage(str(out / name)))  # noqa: E731
    return {"summary": summary, "warped": read("warped.nii.gz"), "field": read("field.nii.gz"),
            "inverse": read("inverse.nii.gz"), "labels": read("labels.nii.gz")}


def readers():
    import itk
    import nibabel
    import SimpleITK as sitk

    return {
        "SimpleITK": (lambda p: sitk.ReadImage(str(p)), sitk.GetArrayFromImage),
        "itk": (lambda p: itk.imread(str(p)), itk.array_from_image),
        "nibabel": (lambda p: nibabel.load(str(p)), lambda im: autoreg.images.to_field(im).array
                    if np.asanyarray(im.dataobj).ndim == 5 else autoreg.images.to_image(im).array),
        "autoreg.Image": (lambda p: autoreg.images.to_image(sitk.ReadImage(str(p))), lambda im: im.array),
    }


@pytest.mark.parametrize("kind", ["SimpleITK", "itk", "nibabel", "autoreg.Image"])
def test_same_bits_as_the_command_line(kind, pair_files, cli_result):
    read, array = readers()[kind]
    r = autoreg.register(read(pair_files["fixed"]), read(pair_files["moving"]),
                         moving_labels=read(pair_files["moving_labels"]), inverse=True, **KEYWORDS)
    assert type(r.warped) is type(read(pair_files["fixed"]))
    np.testing.assert_array_equal(array(r.field), cli_result["field"])
    np.testing.assert_array_equal(array(r.warped), cli_result["warped"])
    np.testing.assert_array_equal(array(r.inverse), cli_result["inverse"])
    np.testing.assert_array_equal(array(r.warped_labels).astype(np.int32), cli_result["labels"].astype(np.int32))
    np.testing.assert_array_equal(r.affine, np.asarray(cli_result["summary"]["affine_lps"]))
    for key in ("non_positive_jacobian_percent", "log_jacobian_std", "settings", "threads"):
        assert r.summary[key] == cli_result["summary"][key], key


def test_numpy_arrays_mean_one_millimetre_voxels():
    from conftest import blob_volume

    fixed, moving = blob_volume(), blob_volume(centre=(13, 12, 17))
    r = autoreg.register(fixed, moving, iterations=[10, 5], affine=False)
    assert isinstance(r.warped, np.ndarray) and r.warped.shape == fixed.shape
    assert r.field.shape == fixed.shape + (3,)
    assert np.abs(r.warped - fixed).mean() < np.abs(moving - fixed).mean()


def test_bad_settings_raise_with_the_command_line_message(pair_files):
    import SimpleITK as sitk

    f = sitk.ReadImage(str(pair_files["fixed"]))
    with pytest.raises(autoreg.SettingsError, match="--regularization must be >= 0"):
        autoreg.register(f, f, regularization=-1)
    with pytest.raises(autoreg.SettingsError, match="--preset must be one of"):
        autoreg.register(f, f, preset="lungs")
    with pytest.raises(autoreg.SettingsError, match="unknown setting 'iteration'"):
        autoreg.register(f, f, iteration=[1])


def test_bad_input_raises(pair_files, tmp_path):
    import SimpleITK as sitk

    f = sitk.ReadImage(str(pair_files["fixed"]))
    with pytest.raises(autoreg.InputError, match="fixed_mask: not on the grid"):
        autoreg.register(f, f, fixed_mask=np.ones((3, 3, 3), np.float32))
    with pytest.raises(autoreg.InputError, match="no voxel inside"):
        autoreg.register(f, f, fixed_mask=np.zeros(sitk.GetArrayFromImage(f).shape, np.float32))
    with pytest.raises(autoreg.InputError, match="x.autoreg: not an autoreg model file"):
        (tmp_path / "x.autoreg").write_text("hello\n")
        autoreg.register(f, f, model=str(tmp_path / "x.autoreg"))
    with pytest.raises(ValueError, match="3-D"):
        autoreg.register(np.zeros((4, 4)), np.zeros((4, 4)))
    with pytest.raises(TypeError, match="unsupported image type"):
        autoreg.register("fixed.nii.gz", "moving.nii.gz")


def test_apply_and_evaluate_agree_with_register(pair_files):
    import SimpleITK as sitk

    f, m = (sitk.ReadImage(str(pair_files[k])) for k in ("fixed", "moving"))
    labels = sitk.ReadImage(str(pair_files["moving_labels"]))
    r = autoreg.register(f, m, moving_labels=labels, **KEYWORDS)
    # apply reads the field in mm, register warped through it in voxels: float rounding apart
    warped = sitk.GetArrayFromImage(r.warped)
    np.testing.assert_allclose(sitk.GetArrayFromImage(autoreg.apply(m, r.field)), warped, atol=1e-4 * np.ptp(warped))
    warped_labels = autoreg.apply(labels, r.field, labels=True)
    same = sitk.GetArrayFromImage(warped_labels) == sitk.GetArrayFromImage(r.warped_labels)
    assert same.mean() > 0.999
    fixed_labels = sitk.ReadImage(str(pair_files["fixed_labels"]))
    e = autoreg.evaluate(field=r.field, fixed_labels=fixed_labels, warped_labels=warped_labels)
    assert e["non_positive_jacobian_percent"] == r.summary["non_positive_jacobian_percent"]
    assert {row["label"] for row in e["labels"]} == {1, 2} and e["mean_dice"] > 0.7


def test_evaluate_gives_the_command_lines_report(pair_files, tmp_path):
    import SimpleITK as sitk

    f, m = (sitk.ReadImage(str(pair_files[k])) for k in ("fixed", "moving"))
    labels = sitk.ReadImage(str(pair_files["moving_labels"]))
    r = autoreg.register(f, m, moving_labels=labels, **KEYWORDS)
    sitk.WriteImage(r.warped_labels, str(tmp_path / "warped_labels.nii.gz"))
    sitk.WriteImage(r.field, str(tmp_path / "field.nii.gz"))
    index = [(16, 13, 12), (10, 10, 10), (8, 14, 9)]
    fixed_points = np.array([f.TransformContinuousIndexToPhysicalPoint(i) for i in index])
    moving_points = fixed_points + [[1.0, -0.5, 0.25]] * len(index)
    np.savetxt(tmp_path / "fixed.csv", fixed_points, delimiter=",", header="x,y,z", comments="")
    np.savetxt(tmp_path / "moving.csv", moving_points, delimiter=",", header="x,y,z", comments="")
    cli = json.loads(run_cli("evaluate", "--json", "--fixed-labels", pair_files["fixed_labels"], "--warped-labels",
                             tmp_path / "warped_labels.nii.gz", "--field", tmp_path / "field.nii.gz").stdout)
    e = autoreg.evaluate(field=r.field, fixed_labels=sitk.ReadImage(str(pair_files["fixed_labels"])),
                         warped_labels=r.warped_labels)
    assert e.keys() == cli.keys() and "mean_hd95_mm" in e
    assert [row.keys() for row in e["labels"]] == [row.keys() for row in cli["labels"]]
    for k in ("mean_dice", "mean_hd95_mm", "non_positive_jacobian_percent", "log_jacobian_std"):
        assert e[k] == pytest.approx(cli[k], rel=1e-6), k
    cli = json.loads(run_cli("evaluate", "--json", "--fixed-points", tmp_path / "fixed.csv", "--moving-points",
                             tmp_path / "moving.csv", "--field", tmp_path / "field.nii.gz").stdout)
    e = autoreg.evaluate(field=r.field, fixed_points=fixed_points, moving_points=moving_points)
    assert e.keys() == cli.keys() and e["tre"].keys() == cli["tre"].keys()
    for when in ("before", "after"):
        for k, v in cli["tre"][when].items():
            assert e["tre"][when][k] == pytest.approx(v, abs=1e-6)


def test_points_move_through_the_field(pair_files):
    import SimpleITK as sitk

    f, m = (sitk.ReadImage(str(pair_files[k])) for k in ("fixed", "moving"))
    r = autoreg.register(f, m, **KEYWORDS)
    index = [(16, 13, 12), (10, 10, 10)]
    points = np.array([f.TransformContinuousIndexToPhysicalPoint(i) for i in index])
    moved = autoreg.apply_points(points, r.field)
    field = sitk.GetArrayFromImage(r.field)
    for p, q, (i, j, k) in zip(points, moved, index):
        np.testing.assert_allclose(q, p + field[k, j, i], atol=1e-4)
    summary = autoreg.register(f, m, fixed_points=points, moving_points=moved, **KEYWORDS).summary
    assert summary["tre"]["points"] == 2 and summary["tre"]["mean_mm"] < 1e-3


def test_releases_the_gil(pair_files):
    import threading
    import time

    import SimpleITK as sitk

    from conftest import blob_volume

    fixed, moving = blob_volume((48, 48, 48), (24, 24, 24), (12, 14, 16)), blob_volume((48, 48, 48), (25, 23, 26), (12, 14, 16))
    span = []

    def work():
        span.append(time.monotonic())
        autoreg.register(fixed, moving, iterations=[150, 100])
        span.append(time.monotonic())

    worker = threading.Thread(target=work)
    worker.start()
    seen = []
    while worker.is_alive():  # pure Python: it runs only while the registration lets the GIL go
        seen.append(time.monotonic())
    worker.join()
    start, end = span
    during = np.array([start] + [t for t in seen if start < t < end] + [end])
    assert end - start > 0.2 and np.diff(during).max() < 0.3 * (end - start)


def test_progress_is_reported(pair_files):
    import SimpleITK as sitk

    f, m = (sitk.ReadImage(str(pair_files[k])) for k in ("fixed", "moving"))
    seen = []
    autoreg.register(f, m, progress=lambda stage, level, step, steps, loss: seen.append((stage, level, step, steps)),
                     **KEYWORDS)
    assert ("affine", 0, 0, 30) in seen and ("deformable", 1, 9, 10) in seen


def test_pack_writes_the_command_lines_training_set(pair_files, tmp_path):
    import shutil

    third, third_labels = tmp_path / "third.nii.gz", tmp_path / "third_labels.nii.gz"
    shutil.copy(pair_files["moving"], third)
    shutil.copy(pair_files["moving_labels"], third_labels)
    manifest = tmp_path / "subjects.csv"
    manifest.write_text("image,labels,split\n"
                        f"{pair_files['fixed']},{pair_files['fixed_labels']},train\n"
                        f"{pair_files['moving']},{pair_files['moving_labels']},train\n"
                        f"{third},{third_labels},val\n")
    run_cli("pack", "--manifest", manifest, "--out", tmp_path / "cli.trainset", "--grid", "16x16x16", "--threads", "2")
    r = autoreg.pack(manifest, tmp_path / "python.trainset", grid=(16, 16, 16))
    assert (r["train"], r["validation"], r["atlas"], r["grid"], r["spacing"]) == (2, 1, False, (16, 16, 16), 2.0)
    assert r["bytes"] == (tmp_path / "python.trainset").stat().st_size > 0
    assert (tmp_path / "python.trainset").read_bytes() == (tmp_path / "cli.trainset").read_bytes()
    with pytest.raises(autoreg.SettingsError, match="--spacing"):
        autoreg.pack(manifest, tmp_path / "bad.trainset", spacing=0)


def test_packs_keywords_are_the_rows_keywords():
    # autoreg.pack's keyword-only parameters are exactly its job's optional rows (pack_schema()),
    # each in the docstring: a row added without its keyword, or the reverse, fails here.
    import inspect

    from autoreg import _autoreg

    rows = [r["keyword"] for r in _autoreg.pack_rows() if not r["required"]]
    params = [p.name for p in inspect.signature(autoreg.pack).parameters.values() if p.kind == p.KEYWORD_ONLY]
    assert params == rows
    for keyword in rows:
        assert f"``{keyword}``" in autoreg.pack.__doc__


def test_every_setting_keyword_is_documented():
    # The keywords settings_of takes (python/src/settings.h), each named in the docstring.
    keywords = [row["keyword"] for row in autoreg._autoreg.settings_table()]
    missing = [k for k in keywords if f"``{k}``" not in autoreg.register.__doc__]
    assert not missing, f"autoreg.register's docstring lacks {missing}"


def _python_value(row):
    """The table's sample as a Python user would give it: a bool, a list, a number or a string."""
    text = row["sample"]
    if row["switch_sets"]:
        return text == "true"
    if "," in text:
        return [float(v) if "." in v else int(v) for v in text.split(",")]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def test_every_row_of_the_settings_table_through_python():
    # The rows of pipeline::setting_rows(): the same default as the command line's and
    # the filter's (tests/itk/test_settings_table.cpp), and the sample given as a Python
    # value reads as the command line's text does.
    table = autoreg._autoreg.settings_table()
    defaults = autoreg._autoreg.settings_text({})
    for row in table:
        keyword = row["keyword"]
        assert defaults[keyword] == row["default"], keyword
        as_text = autoreg._autoreg.settings_text({keyword: row["sample"]})[keyword]
        assert as_text != row["default"], keyword
        assert autoreg._autoreg.settings_text({keyword: _python_value(row)})[keyword] == as_text, keyword
