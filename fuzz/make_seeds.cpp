// Writes the fuzz targets' seed corpora, small valid files made here in code (nothing is
// copied from ../shared/data): autoreg_fuzz_seeds OUT_DIR [SOURCE_DIR] writes
// OUT_DIR/<target>/<name> for the targets archive, manifest, genotype, transform, volume
// and rtstruct. Targets whose first byte picks a format get that byte prefixed.
#include <ATen/ATen.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "autoreg/io/field.h"
#include "autoreg/io/transform.h"
#include "autoreg/io/volume.h"
#include "autoreg/registration/archive.h"
#include "autoreg/registration/genotype.h"
#include "autoreg/rt/image_series.h"
#include "autoreg/rt/series.h"
#include "autoreg/rt/structure_set.h"
#include "autoreg/rt/write.h"

namespace fs = std::filesystem;
using namespace autoreg;

namespace {

std::string bytes_of(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void put(const fs::path& file, const std::string& bytes) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

// A file written by `write` at a scratch path with extension `ext`, stored under
// `target/name` with the format-choosing byte `pick` in front (pick < 0: none).
template <typename Write>
void seed(const fs::path& out, const std::string& target, const std::string& name, const std::string& ext, int pick,
          const Write& write) {
  const fs::path scratch = out / ".scratch" / ("seed" + ext);
  fs::create_directories(scratch.parent_path());
  write(scratch.string());
  put(out / target / name, (pick < 0 ? std::string() : std::string(1, char(pick))) + bytes_of(scratch));
  fs::remove(scratch);
}

// A synthetic axial CT series, held in memory (no files): 32 columns × 32 rows × `slices`
// slices, 1.5 mm between columns, 1.25 mm between rows, 3 mm between slices; with 8
// slices, the fixed grid of fuzz_rtstruct.cpp.
rt::DicomSeries synthetic_series(int slices) {
  rt::DicomSeries s;
  s.folder = "synthetic";
  s.study_uid = "1.2.826.0.1.3680043.9.7777.3.1";
  s.series_uid = "1.2.826.0.1.3680043.9.7777.1.1";
  s.frame_of_reference_uid = "1.2.826.0.1.3680043.9.7777.2.1";
  s.modality = "CT";
  s.patient = {"Fuzz^Phantom", "FUZZ-0001", "19700101", "O", "20260102", "101500", "S1", "A1", "", "seeds", ""};
  s.grid.size = {32, 32, slices};
  s.grid.spacing = {1.5, 1.25, 3};
  s.grid.origin = {-30.5, 12.25, -100};
  for (int k = 0; k < slices; ++k)
    s.slices.push_back({"1.2.840.10008.5.1.4.1.1.2", s.series_uid + ".100." + std::to_string(k + 1),
                        {s.grid.origin[0], s.grid.origin[1], s.grid.origin[2] + 3.0 * k}, ""});
  return s;
}

// A closed polygon of n points on a circle in the plane of slice k (referencing it).
rt::Contour circle(const rt::DicomSeries& s, int k, double cx, double cy, double r, int n) {
  rt::Contour c;
  for (int i = 0; i < n; ++i) {
    const double a = 2 * M_PI * i / n;
    c.points.push_back({cx + r * std::cos(a), cy + r * std::sin(a), s.slices[size_t(k)].position[2]});
  }
  c.referenced_sop_instance_uid = s.slices[size_t(k)].sop_instance_uid;
  return c;
}

// A polygon through (x, y) pairs in the plane of slice k, its slice left for the writer
// to find from the plane.
rt::Contour polygon(const rt::DicomSeries& s, int k, const std::vector<std::array<double, 2>>& xy) {
  rt::Contour c;
  for (const auto& p : xy) c.points.push_back({p[0], p[1], s.slices[size_t(k)].position[2]});
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: autoreg_fuzz_seeds OUT_DIR [SOURCE_DIR]\n";
    return 1;
  }
  const fs::path out = argv[1];
  at::manual_seed(0);
  // Volumes: an oblique 6×5×4 grid, float intensities, int labels, a field.
  io::Geometry g;
  g.size = {6, 5, 4};
  g.spacing = {1.5, 1.0, 2.0};
  g.origin = {-3, 4, 1};
  g.direction = {0, -1, 0, 1, 0, 0, 0, 0, 1};
  const at::Tensor image = at::rand({1, 1, 4, 5, 6});
  const at::Tensor labels = (image * 4).floor().to(at::kInt);
  const at::Tensor field = at::rand({1, 3, 4, 5, 6}) - 0.5;
  const char* exts[] = {".nii", ".nii.gz", ".mha", ".nrrd"};
  for (int e = 0; e < 4; ++e) {
    const std::string ext = exts[e];
    seed(out, "volume", "image" + ext, ext, e, [&](const std::string& p) { io::write_volume(p, {image, g}); });
    seed(out, "volume", "labels" + ext, ext, e, [&](const std::string& p) { io::write_volume(p, {labels, g}); });
    seed(out, "volume", "field" + ext, ext, e, [&](const std::string& p) { io::write_displacement_field(p, field, g); });
  }
  // Transforms: an affine in each format, a field transform in .h5.
  at::Tensor affine = at::eye(4, at::kDouble);
  affine[0][1] = 0.1;
  affine[1][3] = 4.5;
  const char* tfm[] = {".tfm", ".txt", ".mat", ".h5"};
  for (int e = 0; e < 4; ++e) {
    seed(out, "transform", std::string("affine") + tfm[e], tfm[e], e, [&](const std::string& p) { io::write_affine(p, affine); });
  }
  seed(out, "transform", "field.h5", ".h5", 3, [&](const std::string& p) { io::write_displacement_field(p, field, g); });
  // Archives: a small model container and a checkpoint one; the start of the default
  // model when the source tree is given.
  for (const char* kind : {"MODEL", "CHECKPOINT"}) {
    registration::Archive a;
    a.fields = {{"format", "2"}, {"network", "autoreg"}, {"genotype", registration::Genotype::standard().to_string()},
                {"grid", "16 16 16"}, {"spacing_mm", "2 2 2"}};
    a.tensors = {{"param/w", at::rand({2, 3})}, {"adam/0/step", at::ones({1})}};
    seed(out, "archive", std::string("small_") + kind, ".autoreg", -1,
         [&](const std::string& p) { registration::write_archive(p, kind, a); });
  }
  if (argc > 2) {
    const std::string model = bytes_of(fs::path(argv[2]) / "models" / "default.autoreg");
    put(out / "archive" / "default_head", model.substr(0, std::min<size_t>(model.size(), 4096)));
  }
  // Manifests and genotypes.
  put(out / "manifest" / "pairs.csv", "image,labels,split\na.nii.gz,a_seg.nii.gz,train\n,b_seg.nii.gz,val\n");
  put(out / "manifest" / "quoted.csv", "# subjects\n\"labels\",image\n\"x, y.nii\",z.nii\n\nsplit\n");
  put(out / "genotype" / "standard", registration::Genotype::standard().to_string() + "\n");
  put(out / "genotype" / "searched", "conv_3x3 conv_3x3 conv_3x3 conv_3x3 conv_3x3 conv_3x3\nconv_3x3 conv_3x3 conv_3x3 conv_1x1 conv_1x1 conv_3x3\n");
  // RT Structure Sets on a synthetic series held in memory: a disk and a box over several
  // slices; a ring (a hole) and two islands; a concave outline beside an ROI without
  // contours, derived from a named source; the first one cut short. And one CT slice
  // file (the target also reads its input as a series).
  const rt::DicomSeries series = synthetic_series(8);
  const double cx = -30.5 + 1.5 * 15.7, cy = 12.25 + 1.25 * 14.2;
  auto rtstruct = [&](const std::string& name, const std::vector<rt::Roi>& rois, const rt::WriteInfo& info) {
    seed(out, "rtstruct", name, ".dcm", -1, [&](const std::string& p) { rt::write_structure_set(p, rois, series, info); });
  };
  {
    rt::Roi disk{1, "Disk", {255, 0, 0}, "MANUAL", "ORGAN", series.frame_of_reference_uid, {}};
    for (int k = 2; k <= 5; ++k) disk.contours.push_back(circle(series, k, cx, cy, 10, 24));
    rt::Roi box{2, "Box", {0, 0, 255}, "MANUAL", "PTV", series.frame_of_reference_uid, {}};
    for (int k = 1; k <= 6; ++k)
      box.contours.push_back(polygon(series, k, {{-25, 16}, {-12, 16}, {-12, 24}, {-25, 24}}));
    rtstruct("disk_box.dcm", {disk, box}, rt::WriteInfo{});
  }
  {
    rt::Roi ring{3, "Ring", {0, 200, 0}, "MANUAL", "", series.frame_of_reference_uid, {}};
    ring.contours.push_back(circle(series, 3, cx, cy, 12, 32));
    ring.contours.push_back(circle(series, 3, cx, cy, 6, 16));
    ring.contours.push_back(circle(series, 4, cx - 10, cy, 5, 12));
    ring.contours.push_back(circle(series, 4, cx + 10, cy, 5, 12));
    rtstruct("ring_islands.dcm", {ring}, rt::WriteInfo{});
  }
  {
    rt::Roi outline{12, "Concave ^ outline", {10, 20, 30}, "MANUAL", "AVOIDANCE", series.frame_of_reference_uid, {}};
    outline.contours.push_back(polygon(series, 0, {{-29, 13}, {10, 13}, {10, 20}, {-20, 20}, {-20, 45}, {-29, 45}}));
    outline.contours.push_back(polygon(series, 7, {{-5, 30}, {5, 30}, {0, 40}}));
    rt::Roi none{5, "No contour", {1, 2, 3}, "MANUAL", "ORGAN", series.frame_of_reference_uid, {}};
    rt::WriteInfo info;
    info.source_sop_instance_uid = "1.2.826.0.1.3680043.9.7777.4.1";
    info.source_label = "planning";
    info.description = "Fuzz seed.";
    info.software_version = "autoreg fuzz";
    rtstruct("concave_empty.dcm", {none, outline}, info);
  }
  {
    const std::string whole = bytes_of(out / "rtstruct" / "disk_box.dcm");
    put(out / "rtstruct" / "truncated.dcm", whole.substr(0, whole.size() * 3 / 5));
  }
  {
    rt::DicomSeries one = synthetic_series(1);
    one.grid.size = {8, 8, 1};
    std::vector<float> hu(64);
    for (size_t v = 0; v < hu.size(); ++v) hu[v] = float(int(v) * 37 % 2000 - 1000);
    const fs::path folder = out / ".scratch" / "ct";
    fs::remove_all(folder);
    fs::create_directories(folder.parent_path());
    rt::write_image_series(folder.string(), hu.data(), one, rt::ImageSeriesInfo{});
    put(out / "rtstruct" / "ct_slice.dcm", bytes_of(folder / "0001.dcm"));
  }
  fs::remove_all(out / ".scratch");
  std::cout << "seeds written to " << out.string() << "\n";
  return 0;
}
