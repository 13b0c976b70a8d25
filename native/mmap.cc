// pmrpc mmap addon: the only C++ in pmrpc. It maps a file MAP_SHARED (optionally holding an
// exclusive flock on it for the mapping's life: one owner per PM file, as PMDK pools do), msyncs a
// range (on the calling thread, or on a pool thread with a callback — in order, after writes of
// bytes staged for it, on a channel), unmaps, lists a sparse file's data extents (SEEK_DATA / SEEK_HOLE), and computes CRC-32C
// over a byte range (the SSE4.2 crc32 instruction where the CPU has it, else slicing-by-8: the
// same function as pmem/crc32.ts, which calls this one for long ranges).
// Every argument is validated in TypeScript (pmem/native.ts); here we only translate errno into
// an Error carrying `code` (e.g. "ENOENT"), `errno` and `syscall`.
#include <napi.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {

struct Mapping {
  void* addr;
  size_t length;
  bool mapped;
  int lockFd;  // the descriptor holding the flock (-1: none); closed with the mapping
};

// The largest buffer Node 20 accepts for an external ArrayBuffer (node::Buffer::kMaxLength, 2^32).
// Above it napi_create_external_arraybuffer fails after running the finalizer, and node-addon-api
// then frees its finalizer data a second time (glibc: "double free detected"): never go there.
constexpr size_t kMaxMapping = static_cast<size_t>(1) << 32;

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
    case EWOULDBLOCK: return "EWOULDBLOCK";
    case ENXIO: return "ENXIO";
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

void Release(Mapping* m) {
  munmap(m->addr, m->length);
  if (m->lockFd >= 0) close(m->lockFd);  // releases the flock
  m->mapped = false;
}

void Finalize(napi_env, void*, void* hint) {
  Mapping* m = static_cast<Mapping*>(hint);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (m->mapped) {
      g_live.erase(m->addr);
      Release(m);
    }
  }
  delete m;
}

// map(path: string, length: number, flags: number) -> ArrayBuffer
// flags: 1 CREATE  open with O_CREAT and extend the file to `length` if it is shorter (never shrink);
//        2 LOCK    take flock(LOCK_EX | LOCK_NB) first and hold it until unmap (EWOULDBLOCK: held);
//        4 RESET   (with LOCK) once the lock is held, truncate the file to 0 first (a stale temp file);
//        8 RESERVE posix_fallocate(0, length) before mapping: every block of the mapping is reserved
//                  (a full disk is ENOSPC here, not a SIGBUS at a later store); the file still
//                  reads as it did (the new blocks as zeros) and its holes stay holes to SEEK_DATA.
// Without CREATE the file must already be at least `length` bytes (checked in TS first).
Napi::Value Map(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path = info[0].As<Napi::String>().Utf8Value();
  int64_t want = info[1].As<Napi::Number>().Int64Value();
  int mode = info[2].As<Napi::Number>().Int32Value();
  bool create = (mode & 1) != 0;
  bool lockIt = (mode & 2) != 0;
  bool reset = (mode & 4) != 0;
  bool reserve = (mode & 8) != 0;
  if (want <= 0 || static_cast<uint64_t>(want) > kMaxMapping) return ThrowErrno(env, "mmap", EFBIG);
  size_t length = static_cast<size_t>(want);

  int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0);
  int fd = open(path.c_str(), flags, 0644);
  if (fd < 0) return ThrowErrno(env, "open", errno);
  if (lockIt && flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    close(fd);
    return ThrowErrno(env, "flock", err);
  }
  if (reset && ftruncate(fd, 0) != 0) {
    int err = errno;
    close(fd);
    return ThrowErrno(env, "ftruncate", err);
  }
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
    // A sparse extension: no page is written (a 4 GiB file costs no disk and no memory).
    if (ftruncate(fd, static_cast<off_t>(length)) != 0) {
      int err = errno;
      close(fd);
      return ThrowErrno(env, "ftruncate", err);
    }
  }
  if (reserve) {
    // posix_fallocate returns the error (errno is not set); glibc writes zeros where the
    // filesystem has no fallocate. A failure may leave some blocks allocated: the file is unchanged.
    int rc = posix_fallocate(fd, 0, static_cast<off_t>(length));
    if (rc != 0) {
      close(fd);
      return ThrowErrno(env, "fallocate", rc);
    }
  }
  void* addr = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  if (addr == MAP_FAILED) {
    close(fd);
    return ThrowErrno(env, "mmap", err);
  }
  if (!lockIt) {
    close(fd);  // the mapping keeps the file referenced
    fd = -1;
  }
  Mapping* m = new Mapping{addr, length, true, fd};
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_live[addr] = m;
  }
  napi_value value;
  napi_status status = napi_create_external_arraybuffer(env, addr, length, Finalize, m, &value);
  if (status != napi_ok) {
    // Some Node versions run the finalizer when this fails, some do not: whoever finds the mapping
    // still live releases it (the finalizer erases it), and `m` is never touched after that.
    bool stillLive;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      auto it = g_live.find(addr);
      stillLive = it != g_live.end() && it->second == m;
      if (stillLive) {
        g_live.erase(it);
        Release(m);
      }
    }
    if (stillLive) delete m;
    bool pending = false;
    if (napi_is_exception_pending(env, &pending) == napi_ok && pending) {
      napi_value ignored;
      napi_get_and_clear_last_exception(env, &ignored);
    }
    return ThrowErrno(env, "mmap", EFBIG);
  }
  return Napi::Value(env, value);
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

// An msync channel: the async msyncs of one region (pmem/region.ts), run one after another in the
// order they were queued (ticket 1, 2, …) whichever pool thread takes them — a job waits for the
// one before it to finish — each doing its writes (pwrite of bytes staged for it) and then
// msync(MS_SYNC): the writes leave the JS thread, and a job's writes reach the file only after
// every earlier job's msync returned. join(ticket) blocks the caller until that job has finished
// (a sync() on the JS thread, a close, while one runs). After a failed job, the later ones write
// nothing and fail with the same error.
uint32_t Crc32c(uint32_t seed, const uint8_t* p, size_t n);

// The journal of a strict region's file (pmem/journal.ts reads it, the format is documented there):
// every sync of the region appends one record — the lines the sync makes durable, as runs
// [file offset, length] and their bytes — to a file written out in full beforehand, writes the
// lines to their places in the PM file (not synced), and syncs the journal only: one contiguous
// append instead of the scattered runs of the batch's lines (docs/benchmarks.md, issue 29). Before
// the journal wraps (and at an orderly close) a checkpoint syncs the PM file and starts a new
// epoch: the records of older epochs are never replayed. Only the job running on the channel (or
// the JS thread, with no job running) touches it.
constexpr uint32_t kJournalHeadMagic = 0x484a4d50;  // "PMJH"
constexpr uint32_t kJournalRecMagic = 0x524a4d50;   // "PMJR"
constexpr uint64_t kJournalHeadBytes = 4096;
constexpr uint64_t kJournalRecHeader = 64;
constexpr uint64_t kJournalRun = 16;

struct Journal {
  int fd = -1;           // the journal file
  uint64_t size = 0;     // its bytes
  uint64_t head = kJournalHeadBytes;  // where the next record goes
  uint64_t epoch = 0;
  uint64_t seq = 0;      // the last record's sequence in this epoch (from 1)
  uint8_t uuid[16] = {0};  // the PM file's uuid (its header's bytes 24..40)
  int dataFd = -1;       // the PM file
};

void Put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void Put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

int WriteAll(int fd, const uint8_t* p, size_t len, uint64_t at) {
  for (size_t done = 0; done < len;) {
    const ssize_t w = pwrite(fd, p + done, len - done, static_cast<off_t>(at + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : EIO;
    done += static_cast<size_t>(w);
  }
  return 0;
}

// The journal's header (its first 4 KiB): magic, version 1, epoch, the PM file's uuid, CRC-32C of
// [0, 40) at 40; written and synced.
int JournalWriteHead(Journal& j, const char** syscall) {
  std::vector<uint8_t> h(kJournalHeadBytes, 0);
  Put32(h.data(), kJournalHeadMagic);
  Put32(h.data() + 4, 1);
  Put64(h.data() + 8, j.epoch);
  std::memcpy(h.data() + 16, j.uuid, 16);
  Put32(h.data() + 40, Crc32c(0, h.data(), 40));
  *syscall = "write";
  if (int e = WriteAll(j.fd, h.data(), h.size(), 0)) return e;
  *syscall = "fdatasync";
  if (fdatasync(j.fd) != 0) return errno;
  j.head = kJournalHeadBytes;
  j.seq = 0;
  return 0;
}

// A checkpoint: every line written to the PM file so far synced there, then a new epoch.
int JournalCheckpoint(Journal& j, const char** syscall) {
  *syscall = "fdatasync";
  if (fdatasync(j.dataFd) != 0) return errno;
  j.epoch++;
  return JournalWriteHead(j, syscall);
}

// One record: `writes` = [file offset, offset in staged, length, …] of `staged`. Record (little-
// endian): magic u32, version u32 (1), epoch u64, seq u64, runs u32, payload bytes u32, the PM
// file's uuid (16 bytes) at 32, CRC-32C of the record without its CRC word at 48 (u32), 0 u32, 0
// u64; then per run: file offset u64, length u64; then the runs' bytes back to back. A record
// starts on a 4 KiB boundary. Then the lines go to the PM file (not synced) and the journal is
// synced: the record is durable when this returns 0.
int JournalAppend(Journal& j, const char* staged, const std::vector<double>& writes, const char** syscall) {
  const size_t runs = writes.size() / 3;
  uint64_t total = 0;
  for (size_t i = 0; i < runs; i++) total += static_cast<uint64_t>(writes[3 * i + 2]);
  const uint64_t length = kJournalRecHeader + kJournalRun * runs + total;
  const uint64_t padded = (length + 4095) & ~static_cast<uint64_t>(4095);
  *syscall = "write";
  if (padded > j.size - kJournalHeadBytes || total > 0xffffffffu) {
    // Larger than the journal: the lines go to the PM file and a checkpoint syncs them there (a new
    // epoch: no older record is replayed over them).
    for (size_t i = 0; i < runs; i++) {
      if (int e = WriteAll(j.dataFd, reinterpret_cast<const uint8_t*>(staged) + static_cast<size_t>(writes[3 * i + 1]), static_cast<size_t>(writes[3 * i + 2]), static_cast<uint64_t>(writes[3 * i]))) return e;
    }
    return JournalCheckpoint(j, syscall);
  }
  if (j.head + padded > j.size) {
    if (int e = JournalCheckpoint(j, syscall)) return e;
  }
  std::vector<uint8_t> rec(length, 0);
  uint8_t* r = rec.data();
  Put32(r, kJournalRecMagic);
  Put32(r + 4, 1);
  Put64(r + 8, j.epoch);
  Put64(r + 16, j.seq + 1);
  Put32(r + 24, static_cast<uint32_t>(runs));
  Put32(r + 28, static_cast<uint32_t>(total));
  std::memcpy(r + 32, j.uuid, 16);
  uint64_t at = kJournalRecHeader + kJournalRun * runs;
  for (size_t i = 0; i < runs; i++) {
    const uint64_t len = static_cast<uint64_t>(writes[3 * i + 2]);
    Put64(r + kJournalRecHeader + kJournalRun * i, static_cast<uint64_t>(writes[3 * i]));
    Put64(r + kJournalRecHeader + kJournalRun * i + 8, len);
    std::memcpy(r + at, staged + static_cast<size_t>(writes[3 * i + 1]), len);
    at += len;
  }
  Put32(r + 48, Crc32c(Crc32c(0, r, 48), r + 52, length - 52));
  *syscall = "write";
  if (int e = WriteAll(j.fd, r, length, j.head)) return e;
  for (size_t i = 0; i < runs; i++) {
    if (int e = WriteAll(j.dataFd, reinterpret_cast<const uint8_t*>(staged) + static_cast<size_t>(writes[3 * i + 1]), static_cast<size_t>(writes[3 * i + 2]), static_cast<uint64_t>(writes[3 * i]))) return e;
  }
  *syscall = "fdatasync";
  if (fdatasync(j.fd) != 0) return errno;
  j.head += padded;
  j.seq++;
  return 0;
}

struct MsyncChannel {
  std::unique_ptr<Journal> journal;  // set by msyncJournal: every job appends to it instead of msync
  std::mutex m;
  std::condition_variable cv;
  uint64_t queued = 0;    // tickets handed out
  uint64_t finished = 0;  // every ticket up to this one has finished
  int failed = 0;         // errno of the first failed job (0: none)
  const char* failedSyscall = "msync";
};

// msyncChannel() -> External: a channel for msyncAsync / msyncJoin.
Napi::Value MsyncChannelNew(const Napi::CallbackInfo& info) {
  auto* holder = new std::shared_ptr<MsyncChannel>(std::make_shared<MsyncChannel>());
  return Napi::External<std::shared_ptr<MsyncChannel>>::New(info.Env(), holder, [](Napi::Env, std::shared_ptr<MsyncChannel>* h) { delete h; });
}

// msyncAsync(buffer: ArrayBuffer, offset: number, length: number, done: (err) => void
//            [, channel, fd: number, staged: ArrayBuffer, writes: Float64Array]) -> number:
// msync(MS_SYNC) of [offset, offset + length) of a mapping on a libuv pool thread; `done` runs on
// the event loop with null or an Error carrying code, errno and syscall. The JS thread goes on
// meanwhile (strict group commit: the next batch is received while this one syncs; pmem/region.ts
// holds the batch's acknowledgements until `done`). Writes to the mapping during the call may or
// may not be included: only what was written before it is synced when `done` runs. With a
// channel: the job's ticket; it runs after the channel's earlier jobs, and first writes
// `writes` = [fileOffset, stagedOffset, length, …] of `staged` to `fd` (pwrite; the caller leaves
// `staged` alone until `done`). An unmap meanwhile is memory-safe (the msync then fails with
// ENOMEM, reported to `done`).
class MsyncWorker : public Napi::AsyncWorker {
 public:
  MsyncWorker(Napi::Function done, Napi::ArrayBuffer ab, char* addr, size_t length)
      : Napi::AsyncWorker(done, "pmrpc.msync"), ref_(Napi::Persistent(ab)), addr_(addr), length_(length) {}
  void OnChannel(std::shared_ptr<MsyncChannel> channel, uint64_t ticket, int fd, Napi::ArrayBuffer staged, std::vector<double> writes) {
    channel_ = std::move(channel);
    ticket_ = ticket;
    fd_ = fd;
    staged_ = Napi::Persistent(staged);
    stagedBase_ = static_cast<const char*>(staged.Data());
    writes_ = std::move(writes);
  }
  void Execute() override {
    if (!channel_) {
      if (msync(addr_, length_, MS_SYNC) != 0) err_ = errno;
      return;
    }
    {
      std::unique_lock<std::mutex> lock(channel_->m);
      channel_->cv.wait(lock, [&] { return channel_->finished + 1 == ticket_; });
      if (channel_->failed != 0) {
        err_ = channel_->failed;
        syscall_ = channel_->failedSyscall;
      }
    }
    if (err_ == 0) {
      if (channel_->journal) {
        err_ = JournalAppend(*channel_->journal, stagedBase_, writes_, &syscall_);
      } else {
        Run();
      }
    }
    {
      std::lock_guard<std::mutex> lock(channel_->m);
      channel_->finished = ticket_;
      if (err_ != 0 && channel_->failed == 0) {
        channel_->failed = err_;
        channel_->failedSyscall = syscall_;
      }
    }
    channel_->cv.notify_all();
  }
  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    if (err_ == 0) {
      Callback().Call({env.Null()});
      return;
    }
    Napi::Error e = Napi::Error::New(env, std::string(syscall_) + ": " + std::strerror(err_));
    e.Set("code", Napi::String::New(env, ErrnoName(err_)));
    e.Set("errno", Napi::Number::New(env, err_));
    e.Set("syscall", Napi::String::New(env, syscall_));
    Callback().Call({e.Value()});
  }

 private:
  void Run() {
    for (size_t i = 0; i + 2 < writes_.size(); i += 3) {
      const off_t at = static_cast<off_t>(writes_[i]);
      const char* from = stagedBase_ + static_cast<size_t>(writes_[i + 1]);
      const size_t len = static_cast<size_t>(writes_[i + 2]);
      for (size_t done = 0; done < len;) {
        const ssize_t w = pwrite(fd_, from + done, len - done, at + static_cast<off_t>(done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
          err_ = w < 0 ? errno : EIO;
          syscall_ = "write";
          return;
        }
        done += static_cast<size_t>(w);
      }
    }
    if (msync(addr_, length_, MS_SYNC) != 0) err_ = errno;
  }

  Napi::Reference<Napi::ArrayBuffer> ref_;
  char* addr_;
  size_t length_;
  int err_ = 0;
  const char* syscall_ = "msync";
  std::shared_ptr<MsyncChannel> channel_;
  uint64_t ticket_ = 0;
  int fd_ = -1;
  Napi::Reference<Napi::ArrayBuffer> staged_;
  const char* stagedBase_ = nullptr;
  std::vector<double> writes_;
};

Napi::Value MsyncAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::ArrayBuffer ab = info[0].As<Napi::ArrayBuffer>();
  size_t offset = static_cast<size_t>(info[1].As<Napi::Number>().Int64Value());
  size_t length = static_cast<size_t>(info[2].As<Napi::Number>().Int64Value());
  Napi::Function done = info[3].As<Napi::Function>();
  if (ab.IsDetached()) return ThrowErrno(env, "msync", EBADF);
  long page = sysconf(_SC_PAGESIZE);
  size_t start = offset - (offset % static_cast<size_t>(page));
  char* base = static_cast<char*>(ab.Data());
  if (info.Length() < 8 || !info[4].IsExternal()) {
    MsyncWorker* w = new MsyncWorker(done, ab, base + start, length + (offset - start));
    w->Queue();  // deleted by node-addon-api after OnOK
    return env.Undefined();
  }
  std::shared_ptr<MsyncChannel> channel = *info[4].As<Napi::External<std::shared_ptr<MsyncChannel>>>().Data();
  int fd = info[5].As<Napi::Number>().Int32Value();
  Napi::ArrayBuffer staged = info[6].As<Napi::ArrayBuffer>();
  Napi::Float64Array ranges = info[7].As<Napi::Float64Array>();
  const size_t n = ranges.ElementLength();
  if (n % 3 != 0) return ThrowErrno(env, "write", EINVAL);
  std::vector<double> writes(n);
  for (size_t i = 0; i < n; i += 3) {
    writes[i] = ranges[i];
    writes[i + 1] = ranges[i + 1];
    writes[i + 2] = ranges[i + 2];
    if (!(writes[i] >= 0 && writes[i + 1] >= 0 && writes[i + 2] >= 0 && writes[i + 1] + writes[i + 2] <= static_cast<double>(staged.ByteLength()))) {
      return ThrowErrno(env, "write", EINVAL);
    }
  }
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(channel->m);
    ticket = ++channel->queued;
  }
  MsyncWorker* w = new MsyncWorker(done, ab, base + start, length + (offset - start));
  w->OnChannel(channel, ticket, fd, staged, std::move(writes));
  w->Queue();
  return Napi::Number::New(env, static_cast<double>(ticket));
}

// msyncJoin(channel, ticket: number) -> undefined: blocks until the channel's job `ticket` (and
// every one before it) has finished; throws the first failed job's error (code, errno, syscall).
// msyncJournal(channel, fd: number, size: number, epoch: number, uuid: Uint8Array, dataFd: number)
// -> undefined: from now on the channel's jobs append to this journal (JournalAppend) instead of
// msyncing; its header is written for `epoch` and synced first (the caller replayed the records of
// the epochs before: none of them is replayed again). Called with no job submitted yet.
Napi::Value MsyncJournal(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<MsyncChannel> channel = *info[0].As<Napi::External<std::shared_ptr<MsyncChannel>>>().Data();
  auto j = std::make_unique<Journal>();
  j->fd = info[1].As<Napi::Number>().Int32Value();
  j->size = static_cast<uint64_t>(info[2].As<Napi::Number>().Int64Value());
  j->epoch = static_cast<uint64_t>(info[3].As<Napi::Number>().Int64Value());
  Napi::Uint8Array uuid = info[4].As<Napi::Uint8Array>();
  if (uuid.ByteLength() != 16 || j->size < 2 * kJournalHeadBytes || j->size % kJournalHeadBytes != 0) return ThrowErrno(env, "write", EINVAL);
  std::memcpy(j->uuid, uuid.Data(), 16);
  j->dataFd = info[5].As<Napi::Number>().Int32Value();
  const char* syscall = "write";
  if (int e = JournalWriteHead(*j, &syscall)) return ThrowErrno(env, syscall, e);
  channel->journal = std::move(j);
  return env.Undefined();
}

// msyncJournalAppend(channel, staged: ArrayBuffer, writes: Float64Array) -> undefined: one record
// appended and synced on the calling thread (a sync on the JS thread; the caller joined the jobs).
// msyncJournalCheckpoint(channel) -> undefined: a checkpoint now (an orderly close).
Napi::Value MsyncJournalAppend(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<MsyncChannel> channel = *info[0].As<Napi::External<std::shared_ptr<MsyncChannel>>>().Data();
  if (!channel->journal) return ThrowErrno(env, "write", EINVAL);
  Napi::ArrayBuffer staged = info[1].As<Napi::ArrayBuffer>();
  Napi::Float64Array ranges = info[2].As<Napi::Float64Array>();
  const size_t n = ranges.ElementLength();
  if (n % 3 != 0) return ThrowErrno(env, "write", EINVAL);
  std::vector<double> writes(n);
  for (size_t i = 0; i < n; i += 3) {
    writes[i] = ranges[i];
    writes[i + 1] = ranges[i + 1];
    writes[i + 2] = ranges[i + 2];
    if (!(writes[i] >= 0 && writes[i + 1] >= 0 && writes[i + 2] >= 0 && writes[i + 1] + writes[i + 2] <= static_cast<double>(staged.ByteLength()))) return ThrowErrno(env, "write", EINVAL);
  }
  {
    std::lock_guard<std::mutex> lock(channel->m);
    if (channel->finished != channel->queued) return ThrowErrno(env, "write", EBUSY);
    if (channel->failed != 0) return ThrowErrno(env, channel->failedSyscall, channel->failed);
  }
  const char* syscall = "write";
  if (int e = JournalAppend(*channel->journal, static_cast<const char*>(staged.Data()), writes, &syscall)) {
    std::lock_guard<std::mutex> lock(channel->m);
    channel->failed = e;
    channel->failedSyscall = syscall;
    return ThrowErrno(env, syscall, e);
  }
  return env.Undefined();
}

Napi::Value MsyncJournalCheckpoint(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<MsyncChannel> channel = *info[0].As<Napi::External<std::shared_ptr<MsyncChannel>>>().Data();
  if (!channel->journal) return ThrowErrno(env, "write", EINVAL);
  {
    std::lock_guard<std::mutex> lock(channel->m);
    if (channel->finished != channel->queued) return ThrowErrno(env, "write", EBUSY);
    if (channel->failed != 0) return ThrowErrno(env, channel->failedSyscall, channel->failed);
  }
  const char* syscall = "fdatasync";
  if (int e = JournalCheckpoint(*channel->journal, &syscall)) return ThrowErrno(env, syscall, e);
  return env.Undefined();
}

Napi::Value MsyncJoin(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<MsyncChannel> channel = *info[0].As<Napi::External<std::shared_ptr<MsyncChannel>>>().Data();
  uint64_t ticket = static_cast<uint64_t>(info[1].As<Napi::Number>().Int64Value());
  int failed;
  const char* syscall;
  {
    std::unique_lock<std::mutex> lock(channel->m);
    if (ticket > channel->queued) ticket = channel->queued;
    channel->cv.wait(lock, [&] { return channel->finished >= ticket; });
    failed = channel->failed;
    syscall = channel->failedSyscall;
  }
  if (failed != 0) return ThrowErrno(env, syscall, failed);
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
  Mapping* m = it->second;
  g_live.erase(it);
  m->mapped = false;
  int rc = munmap(addr, length);
  int err = errno;
  if (m->lockFd >= 0) {
    close(m->lockFd);  // releases the flock
    m->lockFd = -1;
  }
  if (rc != 0) return ThrowErrno(env, "munmap", err);
  return env.Undefined();
}

// dataExtents(path: string) -> number[]: [start0, end0, start1, end1, ...] the byte ranges of the
// file that hold data (SEEK_DATA / SEEK_HOLE); a file system without hole support reports one
// extent covering the whole file. Opening a sparse region copies only these into memory.
Napi::Value DataExtents(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path = info[0].As<Napi::String>().Utf8Value();
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ThrowErrno(env, "open", errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return ThrowErrno(env, "fstat", err);
  }
  Napi::Array out = Napi::Array::New(env);
  uint32_t n = 0;
  off_t pos = 0;
  while (pos < st.st_size) {
    off_t data = lseek(fd, pos, SEEK_DATA);
    if (data < 0) {
      int err = errno;
      if (err == ENXIO) break;  // no data after pos
      close(fd);
      return ThrowErrno(env, "lseek", err);
    }
    off_t hole = lseek(fd, data, SEEK_HOLE);
    if (hole < 0) {
      int err = errno;
      close(fd);
      return ThrowErrno(env, "lseek", err);
    }
    out.Set(n++, Napi::Number::New(env, static_cast<double>(data)));
    out.Set(n++, Napi::Number::New(env, static_cast<double>(hole)));
    pos = hole;
  }
  close(fd);
  return out;
}

Napi::Value PageSize(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(sysconf(_SC_PAGESIZE)));
}

// ---------------------------------------------------------------- CRC-32C (Castagnoli)

// Slicing-by-8 tables of the reflected polynomial 0x82f63b78 (the fallback without SSE4.2).
struct Crc32cTables {
  uint32_t t[8][256];
  Crc32cTables() {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
      for (int s = 1; s < 8; s++) t[s][i] = t[0][t[s - 1][i] & 0xff] ^ (t[s - 1][i] >> 8);
  }
};
const Crc32cTables g_crcTables;

uint32_t Crc32cSoft(uint32_t c, const uint8_t* p, size_t n) {
  const auto& t = g_crcTables.t;
  while (n >= 8) {
    uint32_t lo = c ^ (uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24);
    uint32_t hi = uint32_t(p[4]) | uint32_t(p[5]) << 8 | uint32_t(p[6]) << 16 | uint32_t(p[7]) << 24;
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
        t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Crc32cHw(uint32_t c, const uint8_t* p, size_t n) {
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c64 = __builtin_ia32_crc32di(c64, v);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c64);
  while (n-- > 0) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}
const bool g_crcHw = __builtin_cpu_supports("sse4.2");
#endif

uint32_t Crc32c(uint32_t seed, const uint8_t* p, size_t n) {
  uint32_t c = ~seed;
#if defined(__x86_64__)
  if (g_crcHw) return ~Crc32cHw(c, p, n);
#endif
  return ~Crc32cSoft(c, p, n);
}

// crc32c(bytes: Uint8Array, start, end, seed) -> number: CRC-32C of bytes[start, end) continuing
// from seed (pmem/crc32.ts checks the arguments; the range is clamped here all the same).
Napi::Value Crc32cFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Uint8Array bytes = info[0].As<Napi::Uint8Array>();
  size_t len = bytes.ByteLength();
  double s = info[1].As<Napi::Number>().DoubleValue();
  double e = info[2].As<Napi::Number>().DoubleValue();
  uint32_t seed = info[3].As<Napi::Number>().Uint32Value();
  size_t start = s <= 0 ? 0 : s >= static_cast<double>(len) ? len : static_cast<size_t>(s);
  size_t end = e <= static_cast<double>(start) ? start : e >= static_cast<double>(len) ? len : static_cast<size_t>(e);
  return Napi::Number::New(env, static_cast<double>(Crc32c(seed, bytes.Data() + start, end - start)));
}

// crc32cHardware() -> boolean: whether Crc32c uses the CPU's crc32 instruction.
Napi::Value Crc32cHardware(const Napi::CallbackInfo& info) {
#if defined(__x86_64__)
  return Napi::Boolean::New(info.Env(), g_crcHw);
#else
  return Napi::Boolean::New(info.Env(), false);
#endif
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("map", Napi::Function::New(env, Map));
  exports.Set("msync", Napi::Function::New(env, Msync));
  exports.Set("msyncAsync", Napi::Function::New(env, MsyncAsync));
  exports.Set("msyncChannel", Napi::Function::New(env, MsyncChannelNew));
  exports.Set("msyncJournal", Napi::Function::New(env, MsyncJournal));
  exports.Set("msyncJournalAppend", Napi::Function::New(env, MsyncJournalAppend));
  exports.Set("msyncJournalCheckpoint", Napi::Function::New(env, MsyncJournalCheckpoint));
  exports.Set("msyncJoin", Napi::Function::New(env, MsyncJoin));
  exports.Set("unmap", Napi::Function::New(env, Unmap));
  exports.Set("pageSize", Napi::Function::New(env, PageSize));
  exports.Set("dataExtents", Napi::Function::New(env, DataExtents));
  exports.Set("crc32c", Napi::Function::New(env, Crc32cFn));
  exports.Set("crc32cHardware", Napi::Function::New(env, Crc32cHardware));
  return exports;
}

}  // namespace

NODE_API_MODULE(pmrpc_mmap, Init)
