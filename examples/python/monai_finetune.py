#!/usr/bin/env python3
"""autoreg's searched network in a MONAI loop: fine-tune the default model on OASIS pairs
with MONAI's Warp and losses, measure MONAI's Dice before and after, save the result as
an .autoreg file and register with it.

    python examples/python/monai_finetune.py [--data DIR] [--steps N] [--out tuned.autoreg]

Data: $AUTOREG_TEST_DATA or ../shared/data (oasis_trt/oasisNN_t1 and _labels); the
first pair validates, the others train. docs/python.md explains each step.
"""
import argparse
import os
import pathlib
import time

import SimpleITK as sitk
import torch
from monai.losses import BendingEnergyLoss, LocalNormalizedCrossCorrelationLoss
from monai.metrics import DiceMetric
from monai.networks.blocks import Warp
from monai.networks.utils import one_hot

import autoreg


def load_pair(folder, fixed, moving, model):
    """The model's inputs (1×1×D×H×W on the model frame of the fixed image) and the
    label maps on the same frame, as `register --model` prepares them."""
    read = lambda name: sitk.ReadImage(str(folder / name))  # noqa: E731
    fixed_image, moving_image = read(f"{fixed}_t1.nii.gz"), read(f"{moving}_t1.nii.gz")
    # autoreg's affine pre-alignment first, as `register --model` does
    affine = autoreg.register(fixed_image, moving_image, deformable=False).affine
    images = autoreg.model_inputs(fixed_image, moving_image, model, affine=affine)
    frame = images["frame"]
    reference = sitk.Image([int(s) for s in frame["size"]], sitk.sitkUInt8)
    reference.SetSpacing(frame["spacing"])
    reference.SetOrigin(frame["origin"])
    reference.SetDirection(frame["direction"])
    to_moving = sitk.AffineTransform(3)  # frame points → moving points
    to_moving.SetMatrix(affine[:3, :3].ravel().tolist())
    to_moving.SetTranslation(affine[:3, 3].tolist())
    labels = {}
    for who, transform in ((fixed, sitk.Transform()), (moving, to_moving)):
        # the label maps on the frame: nearest neighbour, with SimpleITK
        on_frame = sitk.Resample(read(f"{who}_labels.nii.gz"), reference, transform, sitk.sitkNearestNeighbor)
        labels[who] = torch.from_numpy(sitk.GetArrayFromImage(on_frame).astype("int64"))[None, None]
    return images["moving"], images["fixed"], labels[moving], labels[fixed]


def dice(warp, model, pair):
    """MONAI's mean Dice over the fixed image's labels after warping the moving ones."""
    moving, fixed, moving_labels, fixed_labels = pair
    with torch.no_grad():
        ddf = model(moving, fixed)  # autoreg's field on the frame: MONAI's DDF as it is
    warped = warp(moving_labels.float(), ddf).round().long()
    # FreeSurfer's label values (up to 2035) as consecutive classes, 0 the background
    values = torch.unique(fixed_labels)
    index = lambda labels: torch.where(torch.isin(labels, values), torch.searchsorted(values, labels), 0)  # noqa: E731
    metric = DiceMetric(include_background=False, reduction="mean")
    metric(one_hot(index(warped), len(values)), one_hot(index(fixed_labels), len(values)))
    return metric.aggregate().item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = pathlib.Path(os.environ.get("AUTOREG_TEST_DATA", pathlib.Path(__file__).parents[2] / ".." / "shared" / "data"))
    parser.add_argument("--data", type=pathlib.Path, default=default)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", default="tuned.autoreg")
    args = parser.parse_args()
    folder = args.data / "oasis_trt"
    if not (folder / "oasis01_t1.nii.gz").exists():
        raise SystemExit(f"monai_finetune: no OASIS-TRT data in {folder} (set AUTOREG_TEST_DATA)")
    torch.manual_seed(0)
    model = autoreg.load_model("default")
    names = ["oasis01", "oasis02", "oasis03", "oasis04"]
    validation = load_pair(folder, names[0], names[1], "default")
    training = [load_pair(folder, f, m, "default") for f, m in ((names[2], names[3]), (names[3], names[2]))]
    warp, nearest = Warp(mode="bilinear", padding_mode="border"), Warp(mode="nearest", padding_mode="border")
    print(f"validation Dice before fine-tuning: {dice(nearest, model, validation):.4f}")

    similarity, smoothness = LocalNormalizedCrossCorrelationLoss(kernel_size=7), BendingEnergyLoss()
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-5)
    model.train()
    start = time.time()
    for step in range(args.steps):
        moving, fixed, _, _ = training[step % len(training)]
        ddf = model(moving, fixed)
        loss = similarity(warp(moving, ddf), fixed) + 0.5 * smoothness(ddf)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        print(f"step {step + 1}/{args.steps}  loss {loss.item():.4f}  ({time.time() - start:.0f} s)", flush=True)
    model.eval()
    print(f"validation Dice after fine-tuning: {dice(nearest, model, validation):.4f}")

    autoreg.save_model(args.out, model, notes={"fine_tuned": f"monai_finetune.py, {args.steps} steps"})
    fixed, moving = (sitk.ReadImage(str(folder / f"{n}_t1.nii.gz")) for n in names[:2])
    r = autoreg.register(fixed, moving, model=args.out)
    print(f"wrote {args.out}; autoreg.register with it: {r.summary['seconds']:.1f} s, "
          f"{r.summary['non_positive_jacobian_percent']:.3f} % folding")


if __name__ == "__main__":
    main()
