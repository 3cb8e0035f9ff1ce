#include "autoreg/io/volume.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/isfinite.h>
#include <itkGDCMImageIO.h>
#include <itkGDCMImageIOFactory.h>
#include <itkGDCMSeriesFileNames.h>
#include <itkImage.h>
#include <itkImageFileReader.h>
#include <itkImageFileWriter.h>
#include <itkImageIOFactory.h>
#include <itkImageSeriesReader.h>
#include <itkMetaImageIOFactory.h>
#include <itkNiftiImageIOFactory.h>
#include <itkNrrdImageIOFactory.h>
#include <itkHDF5TransformIOFactory.h>
#include <itkMatlabTransformIOFactory.h>
#include <itkTransformFactoryBase.h>
#include <itkTxtTransformIOFactory.h>

#include "autoreg/base/atomic_file.h"
#include "gzip_file.h"
#include "itk_bridge.h"
#include "nifti_file.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <mutex>
#include <sstream>
#include <unistd.h>

namespace autoreg::io {
namespace detail {

void register_formats() {
  // Registered explicitly (not through UseITK's generated header), so that the formats
  // supported do not depend on how a consumer's build is set up.
  static std::once_flag once;
  std::call_once(once, [] {
    itk::NiftiImageIOFactory::RegisterOneFactory();
    itk::MetaImageIOFactory::RegisterOneFactory();
    itk::NrrdImageIOFactory::RegisterOneFactory();
    itk::GDCMImageIOFactory::RegisterOneFactory();
    itk::TxtTransformIOFactory::RegisterOneFactory();
    itk::HDF5TransformIOFactory::RegisterOneFactory();
    itk::MatlabTransformIOFactory::RegisterOneFactory();
    itk::TransformFactoryBase::RegisterDefaultTransforms();
  });
}

std::string itk_reason(const itk::ExceptionObject& e, const std::string& path) {
  std::istringstream in(e.GetDescription());
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("ITK ERROR: ", 0) == 0) {
      const size_t colon = line.find("): ");
      line = colon == std::string::npos ? line.substr(11) : line.substr(colon + 3);
    }
    if (line.rfind("Reason: ", 0) == 0) continue;  // errno from some earlier call
    for (size_t at = line.find(path); !path.empty() && at != std::string::npos; at = line.find(path)) {
      line.replace(at, path.size(), "the file");
    }
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    if (line.empty()) continue;
    out += (out.empty() ? "" : "; ") + line;
  }
  return out.empty() ? "unknown ITK error" : out;
}

void check_output_path(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    fail(path, "is a folder; an output file name is needed (register --out-warped writes a DICOM series on a DICOM "
               "--fixed into a new folder named with a final /)");
  }
  if (!parent.empty() && !fs::is_directory(parent)) fail(path, "output folder does not exist");
  if (::access(parent.empty() ? "." : parent.c_str(), W_OK) != 0) {
    fail(path, "output folder is not writable");
  }
}

void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write) {
  check_output_path(path);
  const fs::path target(path);
  // A header that names its data file (.mhd → .raw, .nhdr → .raw.gz, .hdr → .img) is
  // written with its data under their final names in a temporary folder (named as base's
  // temporaries, so a killed writer's is cleaned up) and moved data first, header last:
  // written beside the output, the header would name a temporary's data file.
  const std::string extension = target.extension().string();
  const bool metaimage_pair = extension == ".mhd" || extension == ".nhdr" || extension == ".hdr";
  const fs::path tmp_dir = metaimage_pair ? fs::path(base::temporary_path(path)) : fs::path();
  std::error_code ec;
  try {
    if (!metaimage_pair) {
      base::write_atomically(path, write);
      return;
    }
    fs::create_directory(tmp_dir);
    const fs::path header = tmp_dir / target.filename();
    write(header.string());
    for (const auto& entry : fs::directory_iterator(tmp_dir)) {
      if (entry.path() != header) fs::rename(entry.path(), target.parent_path() / entry.path().filename());
    }
    fs::rename(header, target);
  } catch (const itk::ExceptionObject& e) {
    if (metaimage_pair) fs::remove_all(tmp_dir, ec);
    fail(path, "cannot write: " + itk_reason(e, path));
  } catch (const fs::filesystem_error& e) {
    if (metaimage_pair) fs::remove_all(tmp_dir, ec);
    fail(path, std::string("cannot write: ") + e.what());
  } catch (const base::WriteError& e) {
    throw IoError(e.what());  // "<path>: cannot rename the temporary file into place (…)"
  } catch (...) {
    if (metaimage_pair) fs::remove_all(tmp_dir, ec);
    throw;
  }
  fs::remove_all(tmp_dir, ec);
}

void write_compressed(const std::string& tmp, const std::function<void(const std::string&, bool)>& write) {
  const std::string gz = ".nii.gz";
  if (tmp.size() <= gz.size() || tmp.compare(tmp.size() - gz.size(), gz.size(), gz) != 0) {
    write(tmp, true);
    return;
  }
  const std::string plain = tmp.substr(0, tmp.size() - 3);  // "….nii": ITK writes it uncompressed
  struct Remove {
    const std::string& path;
    ~Remove() {
      std::error_code ec;
      fs::remove(path, ec);
    }
  } remove_plain{plain};
  write(plain, false);
  gzip_file(plain, tmp, /*level=*/1, at::get_num_threads());
}

namespace {

std::atomic<uint64_t> max_bytes_override{0};

std::string gib(long double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3Lg GiB", bytes / (1ull << 30));
  return buf;
}

// Refuses a header of no voxels, or whose voxels would take more than max_volume_bytes()
// (computed in long double: a corrupt header's sizes overflow 64 bits).
void check_declared_size(const std::string& path, const itk::ImageIOBase& header) {
  long double voxels = 1;
  std::string dims;
  for (unsigned a = 0; a < header.GetNumberOfDimensions(); ++a) {
    voxels *= static_cast<long double>(header.GetDimensions(a));
    dims += (a ? "×" : "") + std::to_string(header.GetDimensions(a));
  }
  if (voxels == 0) fail(path, "declares " + dims + " voxels: an image with no voxels");  // (fuzz_volume: null buffer)
  const long double bytes = voxels * header.GetNumberOfComponents() *
                            std::max<long double>(4, header.GetComponentSize());
  const uint64_t limit = max_volume_bytes();
  if (bytes > static_cast<long double>(limit)) {
    fail(path, "declares " + dims + " voxels (" + gib(bytes) + " in memory), more than the limit of " +
                   gib(limit) + " (set AUTOREG_MAX_VOLUME_GB on a machine with more memory)");
  }
}

// Spacing must be positive and finite and the axes' directions a rotation or reflection
// (orthonormal columns): every resampling here maps points through spacing and direction,
// and a zero, negative or NaN spacing or a singular or sheared direction would give
// fields and warps in wrong or undefined places without any error.
void check_grid(const std::string& path, const itk::ImageIOBase& header) {
  const unsigned n = std::min(3u, header.GetNumberOfDimensions());
  for (unsigned a = 0; a < n; ++a) {
    const double s = header.GetSpacing(a);
    if (!(s > 0) || !std::isfinite(s)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%g", s);
      fail(path, "spacing of axis " + std::to_string(a) + " is " + buf + " (it must be a positive number of mm)");
    }
  }
  for (unsigned a = 0; a < n; ++a) {
    for (unsigned b = a; b < n; ++b) {
      const auto u = header.GetDirection(a), v = header.GetDirection(b);
      double dot = 0;
      for (unsigned r = 0; r < n && r < u.size() && r < v.size(); ++r) dot += u[r] * v[r];
      if (!(std::abs(dot - (a == b ? 1.0 : 0.0)) < 1e-3)) {
        fail(path, std::string("direction matrix is ") +
                       (a == b ? "not made of unit vectors" : "singular or not orthogonal (sheared)") +
                       ": axes " + std::to_string(a) + " and " + std::to_string(b) +
                       " have dot product " + std::to_string(dot) + "; a rotation or reflection is needed");
      }
    }
  }
}

}  // namespace

itk::ImageIOBase::Pointer check_header(const std::string& path, unsigned components) {
  itk::ImageIOBase::Pointer header =
      itk::ImageIOFactory::CreateImageIO(path.c_str(), itk::IOFileModeEnum::ReadMode);
  if (!header) fail(path, "not a readable image (unknown format, or corrupt)");
  header->SetFileName(path);
  check_header_bytes(path);
  try {
    header->ReadImageInformation();
  } catch (const itk::ExceptionObject& e) {
    fail(path, "corrupt or truncated image header: " + itk_reason(e, path));
  }
  try {  // ITK throws from the getters on some headers it read (an unknown component type)
    check_declared_size(path, *header);
    check_grid(path, *header);
    header->GetImageSizeInBytes();
  } catch (const itk::ExceptionObject& e) {
    fail(path, "corrupt image header: " + itk_reason(e, path));
  }
  // ITK reads a truncated uncompressed NIfTI file without complaint (the missing
  // voxels come back as garbage): compare the file's size with what the header needs.
  std::error_code ec;
  const auto file_size = fs::file_size(path, ec);
  const bool nifti = path.size() > 4 && path.compare(path.size() - 4, 4, ".nii") == 0;
  const itk::SizeValueType needed = header->GetImageSizeInBytes() + (nifti ? 348 : 0);
  if (!ec && nifti && file_size < needed) {
    fail(path, "truncated: " + std::to_string(file_size) + " bytes, the header needs " +
                   std::to_string(needed));
  }
  const unsigned dims = header->GetNumberOfDimensions();
  if (dims != 3) fail(path, "is a " + std::to_string(dims) + "-D image; a 3-D volume is needed");
  if (header->GetNumberOfComponents() != components) {
    fail(path, "has " + std::to_string(header->GetNumberOfComponents()) +
                   " components per voxel; " +
                   (components == 1 ? std::string("a scalar volume is needed")
                                    : std::to_string(components) + "-vectors are needed"));
  }
  return header;
}

void read_whole(const std::string& path, const itk::ImageIOBase& header, const std::function<void()>& read) {
  std::future<void> whole;
  const bool nifti = is_nifti_path(path);
  if (nifti || ends_with(path, ".gz")) {
    const uint64_t needed = header.GetImageSizeInBytes() + (nifti ? 348 : 0);
    whole = std::async(std::launch::async, [path, needed] { check_input_stream(path, needed); });
  }
  read();  // on an exception, the future's destructor waits for the check
  if (whole.valid()) whole.get();
}

}  // namespace detail

using namespace detail;

namespace {

template <typename Pixel>
using Image3 = itk::Image<Pixel, 3>;

// Runs a reader, turning ITK's exception into an IoError naming the file.
template <typename Reader>
typename Reader::OutputImageType::Pointer run_reader(Reader* reader, const std::string& path,
                                                     const char* what) {
  try {
    reader->Update();
  } catch (const itk::ExceptionObject& e) {
    fail(path, std::string(what) + ": " + itk_reason(e, path));
  }
  return reader->GetOutput();
}

// `checked`: the ImageIO check_header returned for `path`, when the caller has it already.
template <typename Pixel>
typename Image3<Pixel>::Pointer read_file(const std::string& path, itk::ImageIOBase::Pointer checked = nullptr) {
  auto reader = itk::ImageFileReader<Image3<Pixel>>::New();
  const itk::ImageIOBase::Pointer header = checked ? checked : check_header(path, 1);
  reader->SetImageIO(header);
  reader->SetFileName(path);
  typename Image3<Pixel>::Pointer image;
  read_whole(path, *header, [&] { image = run_reader(reader.GetPointer(), path, "cannot read voxels (truncated or corrupt?)"); });
  return image;
}

template <typename Pixel>
typename Image3<Pixel>::Pointer read_dicom_series(const std::string& dir) {
  auto names = itk::GDCMSeriesFileNames::New();
  names->SetUseSeriesDetails(true);
  names->SetDirectory(dir);
  const auto series = names->GetSeriesUIDs();
  if (series.empty()) fail(dir, "directory holds no DICOM series");
  const auto files = names->GetFileNames(series.front());
  if (files.size() < 2) fail(dir, "DICOM series has fewer than 2 slices; a 3-D volume is needed");
  auto reader = itk::ImageSeriesReader<Image3<Pixel>>::New();
  reader->SetImageIO(itk::GDCMImageIO::New());
  reader->SetFileNames(files);
  return run_reader(reader.GetPointer(), dir, "cannot read DICOM series");
}

template <typename Pixel>
Volume read_as(const std::string& path, at::ScalarType dtype, itk::ImageIOBase::Pointer checked = nullptr) {
  const bool directory = fs::is_directory(path);
  const auto image = directory ? read_dicom_series<Pixel>(path) : read_file<Pixel>(path, checked);
  return from_itk<Pixel>(image.GetPointer(), dtype);
}

template <typename Pixel>
void write_as(const std::string& path, const Volume& v) {
  write_image(path, to_itk<Pixel>(v).GetPointer());
}

}  // namespace

namespace {

void check_readable(const std::string& path) {
  register_formats();
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(path, "no such file or directory");
  if (!fs::is_directory(path) && ::access(path.c_str(), R_OK) != 0) fail(path, "not readable");
}

}  // namespace

void check_output(const std::string& path) { detail::check_output_path(path); }

uint64_t max_volume_bytes() {
  if (const uint64_t set = max_bytes_override.load()) return set;
  if (const char* env = std::getenv("AUTOREG_MAX_VOLUME_GB")) {
    char* end = nullptr;
    const double gb = std::strtod(env, &end);
    if (end != env && *end == '\0' && gb > 0 && gb < 1e9) return uint64_t(gb * double(1ull << 30));
    throw IoError(std::string("AUTOREG_MAX_VOLUME_GB=") + env + ": not a positive number of GiB");
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) / 4 : uint64_t(4) << 30;
}

void set_max_volume_bytes(uint64_t bytes) { max_bytes_override = bytes; }

Geometry read_geometry(const std::string& path) {
  check_readable(path);
  if (fs::is_directory(path)) return read_volume(path).geometry;  // a DICOM series
  const itk::ImageIOBase::Pointer h = check_header(path, 1);
  Geometry g;
  for (unsigned a = 0; a < 3; ++a) {
    g.size[a] = static_cast<int64_t>(h->GetDimensions(a));
    g.spacing[a] = h->GetSpacing(a);
    g.origin[a] = h->GetOrigin(a);
    const auto column = h->GetDirection(a);  // direction of axis a: column a
    for (unsigned r = 0; r < 3; ++r) g.direction[r * 3 + a] = column[r];
  }
  return g;
}

Volume read_volume(const std::string& path, PixelKind kind) {
  check_readable(path);
  if (kind == PixelKind::Labels) {
    using Type = itk::IOComponentEnum;
    // The header is checked once here and handed to the reader.
    const itk::ImageIOBase::Pointer header = fs::is_directory(path) ? nullptr : check_header(path, 1);
    const auto type = header ? header->GetComponentType() : Type::UNKNOWNCOMPONENTTYPE;
    if (type != Type::FLOAT && type != Type::DOUBLE) return read_as<int32_t>(path, at::kInt, header);
    // Label maps stored as floating point (as some tools write them) are read whole and
    // must hold integers: ITK's cast to int would truncate 1.5 to 1 without a word.
    Volume v = read_as<double>(path, at::kDouble, header);
    const at::Tensor d = v.data.flatten();
    const at::Tensor bad = d.ne(d.round()).logical_or_(d.abs().gt(double(INT32_MAX))).logical_or_(d.isnan());
    if (bad.any().item<bool>()) {
      const int64_t i = bad.nonzero()[0][0].item<int64_t>();
      char buf[160];
      std::snprintf(buf, sizeof buf, "label map of floating-point voxels: value %g at voxel %lld is not an integer label",
                    d[i].item<double>(), static_cast<long long>(i));
      fail(path, buf);
    }
    v.data = v.data.to(at::kInt);
    return v;
  }
  Volume v = read_as<float>(path, at::kFloat);
  if (!at::isfinite(v.data).all().item<bool>()) {
    fail(path, "contains non-finite voxel values (NaN or infinity)");
  }
  return v;
}

void write_volume(const std::string& path, const Volume& volume) {
  register_formats();
  const at::Tensor& d = volume.data;
  const auto& s = volume.geometry.size;
  if (!d.defined() || d.dim() != 5 || d.size(0) != 1 || d.size(1) != 1 || d.size(2) != s[2] ||
      d.size(3) != s[1] || d.size(4) != s[0] || !d.device().is_cpu()) {
    fail(path, "volume data must be a CPU tensor 1×1×D×H×W matching the geometry's size");
  }
  if (d.scalar_type() != at::kFloat && d.scalar_type() != at::kInt) {
    fail(path, std::string("cannot write voxels of type ") + c10::toString(d.scalar_type()) +
                   " (float32 or int32)");
  }
  if (writes_nifti(path, volume.geometry)) {
    const at::Tensor voxels = d.reshape({s[2], s[1], s[0]}).contiguous();
    write_atomically(path, [&](const std::string& tmp) {
      write_nifti(tmp, path, volume.geometry, 1, d.scalar_type(), [&](int) { return voxels; }, at::get_num_threads());
    });
  } else if (d.scalar_type() == at::kFloat) {
    write_as<float>(path, volume);
  } else {
    write_as<int32_t>(path, volume);
  }
}

}  // namespace autoreg::io
