#include "nifti_file.h"

#include <ATen/Parallel.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "gzip_file.h"
#include "output_file.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the NIfTI writer writes the host's byte order as little-endian");

namespace autoreg::io::detail {
namespace {

constexpr size_t kHeaderBytes = 352;  // the 348-byte header and 4 bytes saying "no extensions"
constexpr size_t kBlockBytes = size_t(8) << 20;

template <typename T>
void put(std::array<char, kHeaderBytes>& h, size_t offset, T value) {
  std::memcpy(h.data() + offset, &value, sizeof value);
}

// The direction's columns are orthonormal (to float precision).
bool orthonormal(const Geometry& g) {
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 3; ++b) {
      double dot = 0;
      for (int r = 0; r < 3; ++r) dot += g.direction[r * 3 + a] * g.direction[r * 3 + b];
      if (std::abs(dot - (a == b ? 1.0 : 0.0)) > 1e-6) return false;
    }
  }
  return true;
}

// NIfTI's quaternion of a proper rotation matrix r (row-major), as nifti_mat44_to_quatern
// computes it: (b, c, d), with a = sqrt(1 − b² − c² − d²) >= 0.
std::array<double, 3> quaternion(const std::array<double, 9>& r) {
  const auto m = [&](int i, int j) { return r[i * 3 + j]; };
  double a = m(0, 0) + m(1, 1) + m(2, 2) + 1, b, c, d;
  if (a > 0.5) {
    a = 0.5 * std::sqrt(a);
    b = 0.25 * (m(2, 1) - m(1, 2)) / a;
    c = 0.25 * (m(0, 2) - m(2, 0)) / a;
    d = 0.25 * (m(1, 0) - m(0, 1)) / a;
  } else {
    const double xd = 1 + m(0, 0) - (m(1, 1) + m(2, 2));
    const double yd = 1 + m(1, 1) - (m(0, 0) + m(2, 2));
    const double zd = 1 + m(2, 2) - (m(0, 0) + m(1, 1));
    if (xd > 1) {
      b = 0.5 * std::sqrt(xd);
      c = 0.25 * (m(0, 1) + m(1, 0)) / b;
      d = 0.25 * (m(0, 2) + m(2, 0)) / b;
      a = 0.25 * (m(2, 1) - m(1, 2)) / b;
    } else if (yd > 1) {
      c = 0.5 * std::sqrt(yd);
      b = 0.25 * (m(0, 1) + m(1, 0)) / c;
      d = 0.25 * (m(1, 2) + m(2, 1)) / c;
      a = 0.25 * (m(0, 2) - m(2, 0)) / c;
    } else {
      d = 0.5 * std::sqrt(zd);
      b = 0.25 * (m(0, 2) + m(2, 0)) / d;
      c = 0.25 * (m(1, 2) + m(2, 1)) / d;
      a = 0.25 * (m(1, 0) - m(0, 1)) / d;
    }
    if (a < 0) b = -b, c = -c, d = -d;
  }
  return {b, c, d};
}

// The header ITK 5.2 writes for this image: scanner-anatomical qform and sform from the
// geometry turned from LPS into NIfTI's RAS, millimetres, scale 1.
std::array<char, kHeaderBytes> header(const Geometry& g, int components, at::ScalarType type) {
  std::array<char, kHeaderBytes> h{};
  put<int32_t>(h, 0, 348);
  h[38] = 'r';
  const std::array<int16_t, 8> dim = components == 1
      ? std::array<int16_t, 8>{3, int16_t(g.size[0]), int16_t(g.size[1]), int16_t(g.size[2]), 1, 1, 1, 1}
      : std::array<int16_t, 8>{5, int16_t(g.size[0]), int16_t(g.size[1]), int16_t(g.size[2]), 1, int16_t(components), 1, 1};
  for (int i = 0; i < 8; ++i) put<int16_t>(h, 40 + 2 * i, dim[i]);
  if (components > 1) put<int16_t>(h, 68, 1007);  // NIFTI_INTENT_VECTOR
  put<int16_t>(h, 70, type == at::kFloat ? 16 : 8);  // NIFTI_TYPE_FLOAT32 / INT32
  put<int16_t>(h, 72, 32);
  // RAS = diag(−1, −1, 1) · LPS.
  std::array<double, 9> ras{};
  std::array<double, 3> origin{};
  for (int r = 0; r < 3; ++r) {
    const double flip = r < 2 ? -1.0 : 1.0;
    origin[r] = flip * g.origin[r];
    for (int c = 0; c < 3; ++c) ras[r * 3 + c] = flip * g.direction[r * 3 + c];
  }
  const double det = ras[0] * (ras[4] * ras[8] - ras[5] * ras[7]) - ras[1] * (ras[3] * ras[8] - ras[5] * ras[6]) +
                     ras[2] * (ras[3] * ras[7] - ras[4] * ras[6]);
  const double qfac = det < 0 ? -1.0 : 1.0;
  std::array<double, 9> rotation = ras;
  for (int r = 0; r < 3; ++r) rotation[r * 3 + 2] *= qfac;
  put<float>(h, 76, float(qfac));
  for (int a = 0; a < 3; ++a) put<float>(h, 80 + 4 * a, float(g.spacing[a]));
  put<float>(h, 108, float(kHeaderBytes));
  put<float>(h, 112, 1.0f);
  h[123] = 2;  // NIFTI_UNITS_MM
  put<int16_t>(h, 252, 1);  // NIFTI_XFORM_SCANNER_ANAT
  put<int16_t>(h, 254, 1);
  const auto q = quaternion(rotation);
  for (int i = 0; i < 3; ++i) put<float>(h, 256 + 4 * i, float(q[i]));
  for (int i = 0; i < 3; ++i) put<float>(h, 268 + 4 * i, float(origin[i]));
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) put<float>(h, 280 + 16 * r + 4 * c, float(ras[r * 3 + c] * g.spacing[c]));
    put<float>(h, 280 + 16 * r + 12, float(origin[r]));
  }
  std::memcpy(h.data() + 344, "n+1", 4);
  return h;
}

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw IoError(name + ": " + what + (errno ? std::string(" (") + std::strerror(errno) + ")" : ""));
}

}  // namespace

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool is_nifti_path(const std::string& path) { return ends_with(path, ".nii") || ends_with(path, ".nii.gz"); }

bool writes_nifti(const std::string& path, const Geometry& g) {
  return is_nifti_path(path) && orthonormal(g);
}

void write_nifti(const std::string& file, const std::string& name, const Geometry& g, int components,
                 at::ScalarType type, const std::function<at::Tensor(int)>& component, int threads) {
  TORCH_CHECK(components >= 1 && (type == at::kFloat || type == at::kInt), "write_nifti: unsupported image");
  for (int a = 0; a < 3; ++a) {
    if (g.size[a] < 1 || g.size[a] > 32767) fail(name, "NIfTI-1 holds 1 to 32767 voxels per axis");
  }
  const int64_t voxels = g.size[0] * g.size[1] * g.size[2];
  OutputFile out(file, name);
  const auto h = header(g, components, type);
  const bool gz = ends_with(file, ".gz");
  std::unique_ptr<ParallelGzip> gzip;
  if (gz) gzip = std::make_unique<ParallelGzip>(out, 1, threads, kBlockBytes);
  // Voxels that level-1 DEFLATE shrinks by less than a third are stored instead (any
  // gzip reader reads stored blocks): a displacement field's float noise compresses to
  // 0.73–0.88 of its size at ~60 MB/s per thread, while the file is written at ~1 GB/s
  // (the 256³ pair's write stage: 1.6–2.0 s with the field compressed, 0.75 s stored;
  // 147 against 201 MB); images and label maps compress to a tenth or less and are
  // compressed. Decided once per file on
  // 1 MiB from the middle of the first component (its first slices are often
  // background, which compresses better than the rest).
  bool store = false;
  const auto write = [&](const char* data, size_t size) {
    if (!gz) {
      out.write(data, size);
      return;
    }
    std::vector<ParallelGzip::Bytes> round;
    for (size_t offset = 0; offset < size; offset += kBlockBytes) {
      round.push_back({data + offset, std::min(kBlockBytes, size - offset)});
      if (int(round.size()) == gzip->threads()) {
        gzip->write(round, store);
        round.clear();
      }
    }
    if (!round.empty()) gzip->write(round, store);
  };
  write(h.data(), h.size());
  for (int c = 0; c < components; ++c) {
    const at::Tensor t = component(c);
    TORCH_CHECK(t.is_contiguous() && t.device().is_cpu() && t.scalar_type() == type && t.numel() == voxels,
                "write_nifti: component ", c, " is not a contiguous CPU tensor of the image's voxels");
    const char* data = static_cast<const char*>(t.data_ptr());
    const size_t size = size_t(t.nbytes());
    if (gz && c == 0) {
      const size_t probe = std::min<size_t>(size, size_t(1) << 20);
      store = gzip->ratio({data + (size - probe) / 2, probe}) > 2.0 / 3.0;
    }
    write(data, size);
  }
  out.close();
}

}  // namespace autoreg::io::detail
