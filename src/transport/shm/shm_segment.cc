#include "transport/shm/shm_segment.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kf {

ShmSegment::~ShmSegment() { release(); }

ShmSegment::ShmSegment(ShmSegment&& o) noexcept { *this = std::move(o); }

ShmSegment& ShmSegment::operator=(ShmSegment&& o) noexcept {
  if (this != &o) {
    release();
    addr_ = o.addr_;
    bytes_ = o.bytes_;
    name_ = std::move(o.name_);
    owner_ = o.owner_;
    o.addr_ = nullptr;
    o.bytes_ = 0;
    o.owner_ = false;
  }
  return *this;
}

void ShmSegment::release() {
  unlink();
  if (addr_ != nullptr) ::munmap(addr_, bytes_);
  addr_ = nullptr;
}

void ShmSegment::unlink() {
  if (owner_) ::shm_unlink(name_.c_str());
  owner_ = false;
}

Status ShmSegment::create(const std::string& name, size_t bytes, ShmSegment* out) {
  ::shm_unlink(name.c_str());  // a stale segment of a crashed job with the same name
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return system_error(errno_text(("shm_open " + name).c_str(), errno));
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    return system_error(errno_text("ftruncate of a shared-memory segment", err));
  }
  void* addr = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  ::close(fd);
  if (addr == MAP_FAILED) {
    ::shm_unlink(name.c_str());
    return system_error(errno_text("mmap of a shared-memory segment", err));
  }
  ShmSegment s;
  s.addr_ = addr;
  s.bytes_ = bytes;
  s.name_ = name;
  s.owner_ = true;
  *out = std::move(s);
  return Status::ok();
}

Status ShmSegment::open(const std::string& name, size_t bytes, ShmSegment* out) {
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return system_error(errno_text(("shm_open " + name).c_str(), errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < bytes) {
    ::close(fd);
    return system_error("shared-memory segment " + name + " is smaller than expected");
  }
  void* addr = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  ::close(fd);
  if (addr == MAP_FAILED) return system_error(errno_text("mmap of a shared-memory segment", err));
  ShmSegment s;
  s.addr_ = addr;
  s.bytes_ = bytes;
  s.name_ = name;
  *out = std::move(s);
  return Status::ok();
}

}  // namespace kf
