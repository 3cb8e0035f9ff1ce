#include "autoreg/registration/archive.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "autoreg/base/atomic_file.h"
#include "fnv1a.h"

namespace autoreg::registration {
namespace {

using detail::fnv1a;

std::string dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    case at::kLong: return "int64";
    case at::kInt: return "int32";
    case at::kShort: return "int16";
    default: throw std::invalid_argument("archive: only float32, float64, int64, int32 and int16 tensors are stored");
  }
}

at::ScalarType dtype_of(const std::string& name) {
  if (name == "float32") return at::kFloat;
  if (name == "float64") return at::kDouble;
  if (name == "int64") return at::kLong;
  if (name == "int32") return at::kInt;
  if (name == "int16") return at::kShort;
  throw std::invalid_argument("unknown tensor type '" + name + "'");
}

bool valid_key(const std::string& k) {
  return !k.empty() && k.find_first_of(" \t\n\r") == std::string::npos;
}

}  // namespace

const std::string& Archive::field(const std::string& key, const std::string& path) const {
  for (const auto& f : fields) {
    if (f.first == key) return f.second;
  }
  throw ModelFileError(path + ": the file has no '" + key + "' field");
}

bool Archive::has_field(const std::string& key) const {
  for (const auto& f : fields) {
    if (f.first == key) return true;
  }
  return false;
}

void write_archive(const std::string& path, const std::string& kind, const Archive& a) {
  std::vector<at::Tensor> data;
  std::ostringstream header;
  if (a.format < 2 || a.format > kArchiveFormat) throw std::invalid_argument("archive: format " + std::to_string(a.format) + " is not written");
  header << "AUTOREG " << kind << "\nformat " << a.format << "\n";
  for (const auto& [key, value] : a.fields) {
    if (!valid_key(key) || value.find('\n') != std::string::npos) {
      throw std::invalid_argument("archive: field '" + key + "' cannot be stored");
    }
    header << key << " " << value << "\n";
  }
  uint64_t bytes = 0;
  for (const auto& [name, tensor] : a.tensors) {
    if (!valid_key(name)) throw std::invalid_argument("archive: tensor name '" + name + "'");
    const at::Tensor t = tensor.detach().cpu().contiguous();
    header << "tensor " << name << " " << dtype_name(t.scalar_type()) << " " << t.dim();
    for (int64_t s : t.sizes()) header << " " << s;
    header << "\n";
    bytes += t.nbytes();
    data.push_back(t);
  }
  // The checksum covers the header above it too: a flipped grid or spacing is as wrong
  // as a flipped weight.
  const std::string above = header.str();
  uint64_t checksum = fnv1a(above.data(), above.size());
  for (const auto& t : data) checksum = fnv1a(static_cast<const char*>(t.data_ptr()), t.nbytes(), checksum);
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, checksum);
  header << "checksum " << hex << "\ndata " << bytes << "\n";

  try {
    base::write_atomically(path, [&](const std::string& tmp) {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw ModelFileError(path + ": cannot write (" + std::strerror(errno) + ")");
      const std::string h = header.str();
      out.write(h.data(), h.size());
      for (const auto& t : data) out.write(static_cast<const char*>(t.data_ptr()), t.nbytes());
      out.flush();
      if (!out) throw ModelFileError(path + ": writing failed (disk full?)");
    });
  } catch (const base::WriteError& e) {
    throw ModelFileError(e.what());
  }
}

Archive read_archive(const std::string& path, const std::string& kind) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelFileError(path + ": cannot open (" + std::strerror(errno) + ")");
  const auto fail = [&path](const std::string& what) { return ModelFileError(path + ": " + what); };
  std::string line;
  // The first line decides whether this is a model file at all: read at most 64 bytes.
  char first[64] = {};
  in.getline(first, sizeof first);
  line = first;
  if (line.rfind("AUTOREG ", 0) != 0) {
    throw fail("not an autoreg " + std::string(kind == "MODEL" ? "model" : "checkpoint") +
               " file (it does not start with 'AUTOREG " + kind + "')");
  }
  if (line != "AUTOREG " + kind) {
    throw fail("is an autoreg " + line.substr(8) + " file, not a " + kind + " file");
  }
  if (!std::getline(in, line) || line.rfind("format ", 0) != 0) throw fail("no format version");
  int format = 0;
  try {
    format = std::stoi(line.substr(7));
  } catch (const std::exception&) {
    throw fail("unreadable format version '" + line.substr(7) + "'");
  }
  if (format < 1 || format > kArchiveFormat) {
    throw fail("format version " + std::to_string(format) + " is not one this autoreg reads (" +
               std::to_string(kArchiveFormat) + ")" +
               (format > kArchiveFormat ? ": it was written by a newer autoreg" : ""));
  }
  Archive a;
  a.format = std::max(format, 2);  // rewritten as format 2 at least
  std::vector<std::pair<at::ScalarType, std::vector<int64_t>>> shapes;
  std::string checksum;
  std::string above = "AUTOREG " + kind + "\nformat " + std::to_string(format) + "\n";  // what the checksum covers
  uint64_t bytes = 0;
  bool have_data = false;
  while (std::getline(in, line)) {
    if (in.eof()) throw fail("truncated: the header is cut short");
    const size_t space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (key == "tensor") {
      std::istringstream s(value);
      std::string name, dtype;
      int64_t ndim = -1;
      s >> name >> dtype >> ndim;
      // The count is checked before it sizes anything (fuzz_archive: a line claiming 10¹²
      // dimensions threw std::bad_alloc instead of naming the file).
      if (!s || ndim < 0 || ndim > 8) throw fail("malformed tensor line '" + line + "'");
      std::vector<int64_t> sizes(ndim);
      for (auto& d : sizes) s >> d;
      if (!s) throw fail("malformed tensor line '" + line + "'");
      for (int64_t d : sizes) {
        if (d < 0) throw fail("malformed tensor line '" + line + "'");
      }
      try {
        shapes.emplace_back(dtype_of(dtype), sizes);
      } catch (const std::invalid_argument& e) {
        throw fail(e.what());
      }
      a.tensors.emplace_back(name, at::Tensor());
      above += line + "\n";
    } else if (key == "checksum") {
      checksum = value;
    } else if (key == "data") {
      try {
        bytes = std::stoull(value);
      } catch (const std::exception&) {
        throw fail("malformed data line '" + line + "'");
      }
      have_data = true;
      break;
    } else {
      if (!valid_key(key)) throw fail("malformed header line '" + line + "'");
      a.fields.emplace_back(key, value);
      above += line + "\n";
    }
  }
  if (!have_data) throw fail("truncated: the header ends before its 'data' line");
  // Sizes are checked against the header's total and the file's length before anything
  // is allocated: a corrupt dimension must not ask for terabytes.
  uint64_t expected = 0;
  for (const auto& [dtype, sizes] : shapes) {
    uint64_t n = at::elementSize(dtype);
    for (int64_t d : sizes) {
      if (d != 0 && n > (uint64_t(1) << 50) / uint64_t(d)) throw fail("corrupt: tensor sizes too large");
      n *= uint64_t(d);
    }
    expected += n;
    if (expected > (uint64_t(1) << 50)) throw fail("corrupt: tensor sizes too large");
  }
  if (expected != bytes) throw fail("the header's data size does not match its tensors");
  const std::streampos start = in.tellg();
  in.seekg(0, std::ios::end);
  const uint64_t available = uint64_t(in.tellg() - start);
  in.seekg(start);
  if (available < bytes) {
    throw fail("truncated: " + std::to_string(available) + " of the header's " + std::to_string(bytes) +
               " data bytes are there");
  }
  uint64_t sum = format == 1 ? fnv1a(nullptr, 0) : fnv1a(above.data(), above.size());  // format 1: data only
  for (size_t i = 0; i < shapes.size(); ++i) {
    at::Tensor t = at::empty(shapes[i].second, at::TensorOptions().dtype(shapes[i].first));
    in.read(static_cast<char*>(t.data_ptr()), t.nbytes());
    if (size_t(in.gcount()) != t.nbytes()) {
      throw fail("reading tensor '" + a.tensors[i].first + "' failed");  // sizes were checked above
    }
    sum = fnv1a(static_cast<const char*>(t.data_ptr()), t.nbytes(), sum);
    a.tensors[i].second = t;
  }
  if (in.peek() != std::char_traits<char>::eof()) throw fail("unexpected bytes after the data");
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, sum);
  if (checksum != hex) throw fail("corrupt: the data's checksum does not match the header's");
  return a;
}

}  // namespace autoreg::registration
