"""The radiotherapy clinic's path, judged by readers that are not autoreg's: the planning
CT's expert RT Structure Set carried onto the cone-beam CT's DICOM series
(`register --moving-contours --out-contours`), read back with pydicom and rasterised here
(numpy, the even-odd rule) on the CBCT's grid as SimpleITK reads it. The written object
must reference the CBCT's series, slices and frame of reference with new UIDs of its own,
and each structure's Dice against the CBCT's expert contours must equal the label-map
path's (the same registration carrying the same structures, rasterised here, as a label
map) within 0.02. The deformed planning CT written as a DICOM series on the CBCT's
(`--out-warped DIR/`) must read back through ITK as the NIfTI image of the same field
within 1 HU. Both outputs must pass dciodvfy. Skipped without ../shared/data (or
$AUTOREG_TEST_DATA)."""
import json
import os
import pathlib

import numpy as np
import pytest

from conftest import ROOT, run_cli

DATA = pathlib.Path(os.environ.get("AUTOREG_TEST_DATA", ROOT.parent / "shared" / "data")) / "ct_cbct"
DICOM = DATA / "dicom"
pytestmark = pytest.mark.skipif(not (DICOM / "planct_rtstruct.dcm").exists(), reason="no shared CT/CBCT DICOM data")


def polygon_inside(px, py, x, y):
    """Whether the points (x, y) lie inside the closed polygon (px, py): ray crossings."""
    inside = np.zeros(x.shape, bool)
    for a in range(len(px)):
        b = a - 1
        crosses = (py[a] > y) != (py[b] > y)
        at = (px[b] - px[a]) * (y - py[a]) / np.where(py[b] == py[a], 1, py[b] - py[a]) + px[a]
        inside ^= crosses & (x < at)
    return inside


def rasterise(roi_contours, image):
    """The contours (lists of LPS mm points) as a mask on the SimpleITK image's grid
    ([k, j, i]), the polygons of a slice combined by the even-odd rule."""
    size = image.GetSize()
    to_index = np.linalg.inv(np.array(image.GetDirection()).reshape(3, 3) @ np.diag(image.GetSpacing()))
    mask = np.zeros(size[::-1], bool)
    for points in roi_contours:
        index = (np.asarray(points) - np.array(image.GetOrigin())) @ to_index.T
        k = int(round(index[:, 2].mean()))
        assert np.abs(index[:, 2] - k).max() < 0.1, "a contour off its slice"
        if not 0 <= k < size[2]:
            continue
        lo = np.clip(np.floor(index[:, :2].min(0)).astype(int), 0, None)
        hi = np.minimum(np.ceil(index[:, :2].max(0)).astype(int) + 1, size[:2])
        if (hi <= lo).any():
            continue
        jj, ii = np.mgrid[lo[1]:hi[1], lo[0]:hi[0]]
        mask[k, lo[1]:hi[1], lo[0]:hi[0]] ^= polygon_inside(index[:, 0], index[:, 1], ii, jj)
    return mask


def contours_of(dataset):
    """ROI name → its contours' points (N×3 LPS mm)."""
    names = {r.ROINumber: r.ROIName for r in dataset.StructureSetROISequence}
    return {names[c.ReferencedROINumber]: [np.array(s.ContourData, float).reshape(-1, 3) for s in c.ContourSequence]
            for c in dataset.ROIContourSequence if "ContourSequence" in c}


def dice(a, b):
    return 2.0 * np.logical_and(a, b).sum() / (a.sum() + b.sum())


STRUCTURES = (("Bowel_sm_planCT", "Bowel_sm_CBCT"), ("Stomach_duo_planCT", "Stomach_duo_CBCT"))


def expert_labels(rtstruct, grid_file, names):
    """The structures `names` of the RTSTRUCT rasterised here, as labels 1, 2, … on the grid
    of `grid_file`, and the image (for its grid)."""
    import pydicom
    import SimpleITK as sitk

    image = sitk.ReadImage(str(grid_file))
    contours = contours_of(pydicom.dcmread(rtstruct))
    labels = np.zeros(image.GetSize()[::-1], np.int16)
    for value, name in enumerate(names, 1):
        labels[rasterise(contours[name], image)] = value
    return labels, image


@pytest.fixture(scope="module")
def carried(tmp_path_factory):
    """One registration: the planning RTSTRUCT carried as contours, and the same structures
    (rasterised here) carried as a label map, the label-map path."""
    import SimpleITK as sitk

    out = tmp_path_factory.mktemp("rt")
    labels, image = expert_labels(DICOM / "planct_rtstruct.dcm", DATA / "planct_labels.nii.gz", [m for m, _ in STRUCTURES])
    moving_labels = sitk.GetImageFromArray(labels)
    moving_labels.CopyInformation(image)
    sitk.WriteImage(moving_labels, str(out / "moving_labels.nii.gz"))
    summary = json.loads(run_cli(
        "register", "--fixed", DICOM / "cbct02", "--moving", DICOM / "planct",
        "--moving-contours", DICOM / "planct_rtstruct.dcm", "--fixed-contours", DICOM / "cbct02_rtstruct.dcm",
        "--out-contours", out / "rs_on_cbct.dcm", "--moving-labels", out / "moving_labels.nii.gz",
        "--out-labels", out / "labels.nii.gz", "--out-warped", str(out / "ct_on_cbct") + "/", "--out-field", out / "field.nii.gz",
        "--json", "--threads", "2").stdout)
    return out, summary


def test_the_structure_set_references_the_cbct_series(carried):
    import pydicom

    out, summary = carried
    written = pydicom.dcmread(out / "rs_on_cbct.dcm")
    source = pydicom.dcmread(DICOM / "planct_rtstruct.dcm")
    slices = [pydicom.dcmread(f, stop_before_pixels=True) for f in sorted((DICOM / "cbct02").glob("*.dcm"))]
    assert written.SOPClassUID == "1.2.840.10008.5.1.4.1.1.481.3" and written.Modality == "RTSTRUCT"
    assert written.SOPInstanceUID not in (source.SOPInstanceUID, slices[0].SOPInstanceUID)
    assert written.SeriesInstanceUID not in (source.SeriesInstanceUID, slices[0].SeriesInstanceUID)
    assert written.StudyInstanceUID == slices[0].StudyInstanceUID
    assert written.PatientID == slices[0].PatientID
    frame = written.ReferencedFrameOfReferenceSequence[0]
    assert frame.FrameOfReferenceUID == slices[0].FrameOfReferenceUID
    series = frame.RTReferencedStudySequence[0].RTReferencedSeriesSequence[0]
    assert series.SeriesInstanceUID == slices[0].SeriesInstanceUID
    uids = {s.SOPInstanceUID for s in slices}
    assert {i.ReferencedSOPInstanceUID for i in series.ContourImageSequence} == uids
    for roi in written.ROIContourSequence:
        for c in roi.ContourSequence:
            assert c.ContourGeometricType == "CLOSED_PLANAR"
            assert c.ContourImageSequence[0].ReferencedSOPInstanceUID in uids
            assert len(c.ContourData) == 3 * int(c.NumberOfContourPoints)
    names = {r.ROIName for r in written.StructureSetROISequence}
    assert {"Bowel_sm_planCT", "Stomach_duo_planCT"} <= names
    assert written.ApprovalStatus == "UNAPPROVED"


def test_the_written_contours_score_as_the_label_map_path(carried):
    import pydicom
    import SimpleITK as sitk

    out, summary = carried
    written = contours_of(pydicom.dcmread(out / "rs_on_cbct.dcm"))
    expert, cbct = expert_labels(DICOM / "cbct02_rtstruct.dcm", DATA / "cbct02_labels.nii.gz", [f for _, f in STRUCTURES])
    label_path = sitk.GetArrayFromImage(sitk.ReadImage(str(out / "labels.nii.gz")))
    by_name = {s["name"]: s for s in summary["contours"]["structures"]}
    for label, (name, fixed_name) in enumerate(STRUCTURES, 1):
        ours = dice(rasterise(written[name], cbct), expert == label)
        theirs = dice(label_path == label, expert == label)
        assert abs(ours - theirs) < 0.02, (name, ours, theirs)
        # The summary's own figure, with autoreg's reader, agrees with this one.
        assert by_name[name]["compared_with"] == fixed_name
        assert abs(by_name[name]["dice"] - ours) < 0.005, (name, by_name[name], ours)
        assert by_name[name]["dice"] > by_name[name]["dice_before"], by_name[name]


def test_the_written_structure_set_is_valid_for_dciodvfy(carried):
    import shutil
    import subprocess

    if shutil.which("dciodvfy") is None:
        pytest.skip("dciodvfy (Debian's dicom3tools) is not installed")
    out, _ = carried
    report = subprocess.run(["dciodvfy", str(out / "rs_on_cbct.dcm")], capture_output=True, text=True)
    errors = [line for line in (report.stdout + report.stderr).splitlines() if line.startswith("Error")]
    assert errors == [], errors


def test_the_deformed_ct_series_reads_back_as_the_image(carried):
    import pydicom
    import SimpleITK as sitk

    out, _ = carried
    run_cli("apply", "--moving", DICOM / "planct", "--field", out / "field.nii.gz", "--reference", DICOM / "cbct02",
            "--out", out / "ct_on_cbct.nii.gz")
    reader = sitk.ImageSeriesReader()
    reader.SetFileNames(reader.GetGDCMSeriesFileNames(str(out / "ct_on_cbct")))
    series = reader.Execute()
    image = sitk.ReadImage(str(out / "ct_on_cbct.nii.gz"))
    assert series.GetSize() == image.GetSize()
    assert np.allclose(series.GetOrigin(), image.GetOrigin(), atol=1e-3)
    assert np.allclose(series.GetSpacing(), image.GetSpacing(), atol=1e-4)
    assert np.allclose(series.GetDirection(), image.GetDirection(), atol=1e-6)
    difference = np.abs(sitk.GetArrayFromImage(series).astype(float) - sitk.GetArrayFromImage(image))
    assert difference.max() <= 1.0, difference.max()
    files = sorted((out / "ct_on_cbct").iterdir())
    first = pydicom.dcmread(files[0], stop_before_pixels=True)
    cbct = pydicom.dcmread(sorted((DICOM / "cbct02").glob("*.dcm"))[0], stop_before_pixels=True)
    assert len(files) == len(list((DICOM / "cbct02").glob("*.dcm")))
    assert first.Modality == "CT" and first.FrameOfReferenceUID == cbct.FrameOfReferenceUID
    assert first.StudyInstanceUID == cbct.StudyInstanceUID and first.PatientID == cbct.PatientID
    assert first.SeriesInstanceUID != cbct.SeriesInstanceUID


def test_the_deformed_ct_series_is_no_worse_for_dciodvfy_than_its_source(carried):
    import shutil
    import subprocess

    if shutil.which("dciodvfy") is None:
        pytest.skip("dciodvfy (Debian's dicom3tools) is not installed")
    out, _ = carried

    def errors(path):
        report = subprocess.run(["dciodvfy", str(path)], capture_output=True, text=True)
        return [line for line in (report.stdout + report.stderr).splitlines() if line.startswith("Error")]

    ours = errors(sorted((out / "ct_on_cbct").iterdir())[0])
    source = errors(sorted((DICOM / "cbct02").glob("*.dcm"))[0])
    assert set(ours) <= set(source), (ours, source)


def test_a_pairs_file_carries_contours(tmp_path):
    import csv

    (tmp_path / "pairs.csv").write_text(
        "fixed,moving,moving_contours,fixed_contours\n"
        f"{DICOM / 'cbct02'}/,{DICOM / 'planct'}/,{DICOM / 'planct_rtstruct.dcm'},{DICOM / 'cbct02_rtstruct.dcm'}\n")
    run_cli("register", "--pairs", tmp_path / "pairs.csv", "--out-dir", tmp_path / "out", "--iterations", "10,10,5",
            "--affine-iterations", "10,10", "--threads", "2")
    rows = list(csv.DictReader(open(tmp_path / "out" / "summary.csv")))
    assert rows[0]["pair"] == "planct_to_cbct02" and rows[0]["status"] == "done", rows
    assert 0.3 < float(rows[0]["contours_dice"]) < 1, rows
    summary = json.loads((tmp_path / "out" / "planct_to_cbct02.json").read_text())
    assert summary["contours"]["written"] == str(tmp_path / "out" / "planct_to_cbct02_contours.dcm")
    assert (tmp_path / "out" / "planct_to_cbct02_contours.dcm").is_file()


def test_the_structures_as_a_label_map_with_their_table(tmp_path):
    import csv

    import SimpleITK as sitk

    summary = json.loads(run_cli(
        "register", "--fixed", DICOM / "cbct02", "--moving", DICOM / "planct",
        "--moving-contours", DICOM / "planct_rtstruct.dcm", "--out-labels", tmp_path / "labels.nii.gz",
        "--out-warped", tmp_path / "warped.nii.gz", "--out-field", tmp_path / "field.nii.gz",
        "--iterations", "10,10,5", "--affine-iterations", "10,10", "--json", "--threads", "2").stdout)
    table = {int(r["label"]): r for r in csv.DictReader(open(tmp_path / "labels.csv"))}
    structures = {s["number"]: s for s in summary["contours"]["structures"]}
    assert {n: t["name"] for n, t in table.items()} == {n: s["name"] for n, s in structures.items()}
    image = sitk.ReadImage(str(tmp_path / "labels.nii.gz"))
    labels = sitk.GetArrayFromImage(image)
    voxel_ml = np.prod(image.GetSpacing()) / 1000
    for number, s in structures.items():
        if s["name"].startswith("LUNG"):  # overlapped by no other structure
            assert abs((labels == number).sum() * voxel_ml - s["volume_carried_ml"]) < 0.02 * s["volume_carried_ml"], s


def test_apply_carries_the_structure_set_through_the_written_field(carried, tmp_path):
    """`apply --contours` with the field register wrote: the same structures as register's
    own (the field through a NIfTI file and back); `evaluate` on the two structure sets
    scores them as register did, and as the independent rasteriser here does."""
    import pydicom
    import SimpleITK as sitk

    out, summary = carried
    applied = json.loads(run_cli(
        "apply", "--field", out / "field.nii.gz", "--contours", DICOM / "planct_rtstruct.dcm", "--moving", DICOM / "planct",
        "--reference", DICOM / "cbct02", "--out", tmp_path / "applied.dcm", "--fixed-contours", DICOM / "cbct02_rtstruct.dcm",
        "--json").stdout)
    registered = {s["name"]: s for s in summary["contours"]["structures"]}
    for s in applied["structures"]:
        assert s["contours"] > 0, s
        if "dice" in s:
            assert abs(s["dice"] - registered[s["name"]]["dice"]) < 0.002, (s, registered[s["name"]])
    report = json.loads(run_cli("evaluate", "--fixed-contours", DICOM / "cbct02_rtstruct.dcm", "--warped-contours",
                                tmp_path / "applied.dcm", "--series", DICOM / "cbct02", "--json").stdout)["contours"]
    scored = {s["name"]: s for s in report["structures"]}
    written = contours_of(pydicom.dcmread(tmp_path / "applied.dcm"))
    expert, cbct = expert_labels(DICOM / "cbct02_rtstruct.dcm", DATA / "cbct02_labels.nii.gz", [f for _, f in STRUCTURES])
    for label, (name, fixed_name) in enumerate(STRUCTURES, 1):
        s = scored[name]
        assert s["compared_with"] == fixed_name and s["hd95_mm"] > 0, s
        assert abs(s["dice"] - registered[name]["dice"]) < 0.002, (s, registered[name])
        assert abs(s["dice"] - dice(rasterise(written[name], cbct), expert == label)) < 0.005, s
    assert scored["ROI"]["compared_with"] is None  # no structure of that name on the CBCT
    assert report["mean_dice"] > 0.5, report


def test_python_reads_and_writes_structure_sets(tmp_path):
    """autoreg.read_contours fills each structure as the independent rasteriser here does;
    a label map written back with autoreg.write_contours on the same series and read by
    pydicom gives Dice >= 0.98 per structure (the round trip); bad input is InputError."""
    import pydicom

    import autoreg

    planct = autoreg.read_contours(DICOM / "planct_rtstruct.dcm", DICOM / "planct")
    assert planct.names() == ["Bowel_sm_planCT", "LUNG_L", "LUNG_R", "ROI", "Stomach_duo_planCT"], planct.names()
    theirs, image = expert_labels(DICOM / "planct_rtstruct.dcm", DATA / "planct_labels.nii.gz", [m for m, _ in STRUCTURES])
    for label, (name, _) in enumerate(STRUCTURES, 1):
        assert dice(planct[name].mask, theirs == label) > 0.99, name
    labels = planct.label_map()
    assert labels.array.shape == planct["LUNG_L"].mask.shape and np.allclose(labels.spacing, image.GetSpacing())
    n = autoreg.write_contours(tmp_path / "again.dcm", planct, DICOM / "planct", description="a round trip")
    written = contours_of(pydicom.dcmread(tmp_path / "again.dcm"))
    assert n == sum(len(c) for c in written.values()) > 0
    for s in planct.structures:
        again = rasterise(written[s.name], image)
        assert dice(again, s.mask) >= 0.98, (s.name, dice(again, s.mask))
    # A label map with names.
    autoreg.write_contours(tmp_path / "labels.dcm", labels, DICOM / "planct", names={1: "Bowel"})
    assert "Bowel" in contours_of(pydicom.dcmread(tmp_path / "labels.dcm"))
    with pytest.raises(autoreg.InputError, match="planct_rtstruct.dcm"):
        autoreg.read_contours(DICOM / "planct_rtstruct.dcm", DICOM / "cbct02")  # drawn on another series
    with pytest.raises(autoreg.InputError, match="not on the grid"):
        autoreg.write_contours(tmp_path / "bad.dcm", [autoreg.Structure(1, "x", np.zeros((2, 2, 2), bool))], DICOM / "planct")


def test_segment_writes_its_labels_as_a_structure_set_on_the_target_series(tmp_path):
    """`segment --target SERIES/ --out-contours`: the fused labels as structures named by
    the table, on the target series (its frame of reference), each as the fused label map
    by the independent rasteriser (Dice >= 0.98); the same figures as evaluate gives."""
    import pydicom
    import SimpleITK as sitk

    (tmp_path / "atlases.csv").write_text(f"image,labels\n{DATA / 'planct.nii.gz'},{DATA / 'planct_labels.nii.gz'}\n")
    (tmp_path / "names.csv").write_text("label,name,red,green,blue\n1,Bowel_sm_seg,255,128,0\n2,Stomach_duo_seg,0,128,255\n")
    run_cli("segment", "--target", DICOM / "cbct02", "--atlases", tmp_path / "atlases.csv", "--out", tmp_path / "fused.nii.gz",
            "--out-contours", tmp_path / "seg.dcm", "--label-names", tmp_path / "names.csv", "--iterations", "20,20,10",
            "--affine-iterations", "20,20", "--threads", "2")
    ds = pydicom.dcmread(tmp_path / "seg.dcm")
    cbct = pydicom.dcmread(sorted((DICOM / "cbct02").glob("*.dcm"))[0])
    assert ds.ReferencedFrameOfReferenceSequence[0].FrameOfReferenceUID == cbct.FrameOfReferenceUID
    assert [int(c) for c in ds.ROIContourSequence[0].ROIDisplayColor] == [255, 128, 0]
    written = contours_of(ds)
    assert sorted(written) == ["Bowel_sm_seg", "Stomach_duo_seg"], sorted(written)
    image = sitk.ReadImage(str(tmp_path / "fused.nii.gz"))
    fused = sitk.GetArrayFromImage(image)
    for label, name in ((1, "Bowel_sm_seg"), (2, "Stomach_duo_seg")):
        assert dice(rasterise(written[name], image), fused == label) >= 0.98, name
    report = json.loads(run_cli("evaluate", "--fixed-contours", DICOM / "cbct02_rtstruct.dcm", "--warped-contours",
                                tmp_path / "seg.dcm", "--series", DICOM / "cbct02", "--json").stdout)["contours"]
    assert {s["compared_with"] for s in report["structures"]} == {"Bowel_sm_CBCT", "Stomach_duo_CBCT"}, report
