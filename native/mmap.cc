// pmrpc mmap addon: the only C++ in pmrpc. It maps a file MAP_SHARED, msyncs a range and unmaps.
// Every argument is validated in TypeScript (pmem/native.ts); here we only translate errno into
// an Error carrying `code` (e.g. "ENOENT"), `errno` and `syscall`.
#include <napi.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>
#include <unordered_map>

namespace {

struct Mapping {
  void* addr;
  size_t length;
  bool mapped;
};

const char* ErrnoName(int err) {
  switch (err) {
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EEXIST: return "EEXIST";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case ENOMEM: return "ENOMEM";
    case ENOSPC: return "ENOSPC";
    case EFBIG: return "EFBIG";
    case EBADF: return "EBADF";
    case ENODEV: return "ENODEV";
    case EROFS: return "EROFS";
    case EIO: return "EIO";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case EOVERFLOW: return "EOVERFLOW";
    default: return "EUNKNOWN";
  }
}

Napi::Value ThrowErrno(Napi::Env env, const char* syscall, int err) {
  Napi::Error e = Napi::Error::New(env, std::string(syscall) + ": " + std::strerror(err));
  e.Set("code", Napi::String::New(env, ErrnoName(err)));
  e.Set("errno", Napi::Number::New(env, err));
  e.Set("syscall", Napi::String::New(env, syscall));
  e.ThrowAsJavaScriptException();
  return env.Undefined();
}

// Live mappings by address, so that an explicit unmap and the GC finalizer never both munmap.
std::mutex g_mutex;
std::unordered_map<void*, Mapping*> g_live;

void Finalize(Napi::Env, void*, Mapping* m) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (m->mapped) {
      munmap(m->addr, m->length);
      g_live.erase(m->addr);
    }
  }
  delete m;
}

// map(path: string, length: number, create: boolean) -> ArrayBuffer
// create: open with O_CREAT and extend the file to `length` if it is shorter (never shrink).
// Without create the file must already be at least `length` bytes (checked in TS first).
Napi::Value Map(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path = info[0].As<Napi::String>().Utf8Value();
  size_t length = static_cast<size_t>(info[1].As<Napi::Number>().Int64Value());
  bool create = info[2].As<Napi::Boolean>().Value();

  int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0);
  int fd = open(path.c_str(), flags, 0644);
  if (fd < 0) return ThrowErrno(env, "open", errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return ThrowErrno(env, "fstat", err);
  }
  if (static_cast<size_t>(st.st_size) < length) {
    if (!create) {
      close(fd);
      return ThrowErrno(env, "mmap", EOVERFLOW);
    }
    if (ftruncate(fd, static_cast<off_t>(length)) != 0) {
      int err = errno;
      close(fd);
      return ThrowErrno(env, "ftruncate", err);
    }
  }
  void* addr = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);  // the mapping keeps the file referenced
  if (addr == MAP_FAILED) return ThrowErrno(env, "mmap", err);
  Mapping* m = new Mapping{addr, length, true};
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_live[addr] = m;
  }
  return Napi::ArrayBuffer::New(env, addr, length, Finalize, m);
}

// msync(buffer: ArrayBuffer, offset: number, length: number) -> undefined; MS_SYNC, page-aligned start.
Napi::Value Msync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::ArrayBuffer ab = info[0].As<Napi::ArrayBuffer>();
  size_t offset = static_cast<size_t>(info[1].As<Napi::Number>().Int64Value());
  size_t length = static_cast<size_t>(info[2].As<Napi::Number>().Int64Value());
  if (ab.IsDetached()) return ThrowErrno(env, "msync", EBADF);
  long page = sysconf(_SC_PAGESIZE);
  size_t start = offset - (offset % static_cast<size_t>(page));
  char* base = static_cast<char*>(ab.Data());
  if (msync(base + start, length + (offset - start), MS_SYNC) != 0) return ThrowErrno(env, "msync", errno);
  return env.Undefined();
}

// unmap(buffer: ArrayBuffer) -> undefined. Detaches the buffer first so no JS view can touch
// the unmapped pages afterwards (they become zero-length).
Napi::Value Unmap(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::ArrayBuffer ab = info[0].As<Napi::ArrayBuffer>();
  if (ab.IsDetached()) return env.Undefined();
  void* addr = ab.Data();
  size_t length = ab.ByteLength();
  ab.Detach();
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_live.find(addr);
  if (it == g_live.end()) return env.Undefined();  // not ours, or already unmapped
  it->second->mapped = false;
  g_live.erase(it);
  if (munmap(addr, length) != 0) return ThrowErrno(env, "munmap", errno);
  return env.Undefined();
}

Napi::Value PageSize(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(sysconf(_SC_PAGESIZE)));
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("map", Napi::Function::New(env, Map));
  exports.Set("msync", Napi::Function::New(env, Msync));
  exports.Set("unmap", Napi::Function::New(env, Unmap));
  exports.Set("pageSize", Napi::Function::New(env, PageSize));
  return exports;
}

}  // namespace

NODE_API_MODULE(pmrpc_mmap, Init)
