#include "autoreg/base/atomic_file.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

namespace autoreg::base {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPrefix = ".autoreg-tmp-";
// A temporary untouched this long whose process has ended is a killed writer's.
constexpr auto kStaleAfter = std::chrono::minutes(15);

// This machine's name with everything but letters and digits dropped, so that the
// temporaries' names split at '-' without doubt.
const std::string& host_tag() {
  static const std::string tag = [] {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return std::string("host");
    std::string out;
    for (const char* c = name; *c; ++c) {
      if (std::isalnum(static_cast<unsigned char>(*c))) out += *c;
    }
    return out.empty() ? std::string("host") : out;
  }();
  return tag;
}

// The process id in a temporary's name when it is one of this host's, else 0.
pid_t owner_of(const std::string& name) {
  if (name.compare(0, kPrefix.size(), kPrefix) != 0) return 0;
  const std::string rest = name.substr(kPrefix.size());
  const std::string& host = host_tag();
  if (rest.compare(0, host.size(), host) != 0 || rest.size() <= host.size() || rest[host.size()] != '-') return 0;
  size_t at = host.size() + 1, digits = 0;
  long pid = 0;
  while (at < rest.size() && std::isdigit(static_cast<unsigned char>(rest[at])) && digits < 9) {
    pid = pid * 10 + (rest[at++] - '0');
    ++digits;
  }
  return digits > 0 && at < rest.size() && rest[at] == '-' ? pid_t(pid) : 0;
}

bool process_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// remove_stale_temporaries, once per folder and process.
void clean_once(const fs::path& folder) {
  static std::mutex mutex;
  static std::set<std::string> cleaned;
  std::error_code ec;
  const std::string key = fs::absolute(folder.empty() ? fs::path(".") : folder, ec).lexically_normal().string();
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!cleaned.insert(key).second) return;
  }
  remove_stale_temporaries(key);
}

}  // namespace

std::string temporary_path(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  const fs::path target(path);
  const std::string name = std::string(kPrefix) + host_tag() + "-" + std::to_string(::getpid()) + "-" +
                           std::to_string(counter++) + "-" + target.filename().string();
  return (target.parent_path() / name).string();
}

int remove_stale_temporaries(const std::string& folder) {
  int removed = 0;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const pid_t pid = owner_of(it->path().filename().string());
    if (pid <= 0 || pid == ::getpid() || process_alive(pid)) continue;
    // Also old: a process of another PID namespace on a host of the same name (containers
    // sharing the host's network) looks ended from here while it writes.
    std::error_code time_ec;
    const auto written = fs::last_write_time(it->path(), time_ec);
    if (time_ec || now - written < kStaleAfter) continue;
    std::error_code remove_ec;
    if (fs::remove_all(it->path(), remove_ec) > 0 && !remove_ec) ++removed;
  }
  return removed;
}

void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write) {
  clean_once(fs::path(path).parent_path());
  const std::string tmp = temporary_path(path);
  std::error_code ec;
  try {
    write(tmp);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    fs::remove_all(tmp, ec);
    throw WriteError(path + ": cannot rename the temporary file into place (" + why + ")");
  }
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw WriteError(path + ": cannot write (" + std::strerror(errno) + ")");
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.flush();
    if (!out) throw WriteError(path + ": cannot write (disk full?)");
  });
}

}  // namespace autoreg::base
