#include "output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "autoreg/io/volume.h"

namespace autoreg::io::detail {
namespace {

constexpr size_t kAlign = 4096;             // a multiple of any logical block size
constexpr size_t kBuffer = size_t(4) << 20;  // staging buffer, a multiple of kAlign

}  // namespace

OutputFile::OutputFile(const std::string& path, std::string name) : name_(std::move(name)) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_DIRECT, 0666);
  direct_ = fd_ >= 0;
  if (fd_ < 0 && errno == EINVAL) fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) fail("cannot create");
  if (::posix_memalign(reinterpret_cast<void**>(&buffer_), kAlign, kBuffer) != 0) {
    ::close(fd_);
    throw std::bad_alloc();
  }
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  std::free(buffer_);
}

void OutputFile::fail(const std::string& what) const {
  throw IoError(name_ + ": " + what + (errno ? std::string(" (") + std::strerror(errno) + ")" : ""));
}

void OutputFile::write(const char* data, size_t size) {
  while (size > 0) {
    const size_t n = std::min(size, kBuffer - used_);
    std::memcpy(buffer_ + used_, data, n);
    used_ += n;
    data += n;
    size -= n;
    if (used_ == kBuffer) flush_blocks(false);
  }
}

// Writes the buffer: whole aligned blocks, or with `last` everything, padded with zeros
// to a block for a direct write (close() then cuts the file to its length).
void OutputFile::flush_blocks(bool last) {
  size_t length = last ? used_ : used_ / kAlign * kAlign;
  if (length == 0) return;
  if (direct_ && length % kAlign != 0) {
    const size_t padded = (length + kAlign - 1) / kAlign * kAlign;
    std::memset(buffer_ + length, 0, padded - length);
    length = padded;
  }
  size_t done = 0;
  while (done < length) {
    errno = 0;
    const ssize_t n = ::write(fd_, buffer_ + done, length - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EINVAL && direct_) {
      // The file system opened the file for direct I/O but refuses this write: go on
      // through the page cache.
      const int flags = ::fcntl(fd_, F_GETFL);
      if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) < 0) fail("cannot write");
      direct_ = false;
      continue;
    }
    if (n <= 0) fail("cannot write");
    done += size_t(n);
  }
  const size_t kept = used_ > length ? used_ - length : 0;  // an unaligned tail waits for more
  if (kept > 0) std::memmove(buffer_, buffer_ + length, kept);
  written_ += std::min(length, used_);
  used_ = kept;
}

void OutputFile::close() {
  const size_t total = written_ + used_;
  flush_blocks(true);
  errno = 0;
  if (::ftruncate(fd_, off_t(total)) != 0) fail("cannot write");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot write");
}

}  // namespace autoreg::io::detail
