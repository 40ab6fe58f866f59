#include "source/compressed_file.hpp"

#include <isa-l/igzip_lib.h>
#include <zstd.h>

#include <algorithm>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "source/read_ahead.hpp"

namespace itchbench {

const char* to_string(Compression c) {
  return c == Compression::kGzip ? "gzip" : c == Compression::kZstd ? "zstd" : "none";
}

Compression detect_compression(const uint8_t* head, size_t n) {
  if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) return Compression::kGzip;
  if (n >= 4 && head[0] == 0x28 && head[1] == 0xb5 && head[2] == 0x2f && head[3] == 0xfd) return Compression::kZstd;
  return Compression::kNone;
}

namespace {

// gzip inflated by ISA-L (igzip), member after member: twice zlib's rate here (a 1.5 GB nasdaq-day file from
// memory: 435 MB/s against 217), which is the gateway's own rate on a gzip capture, its decompression thread
// being the slower of the two. Each member's header, CRC-32 and length are checked; a member cut short, a
// broken one, or bytes after the last that are no member are an error, never a shorter capture.
struct GzipStream {
  FILE* file = nullptr;
  inflate_state state{};
  std::vector<uint8_t> in = std::vector<uint8_t>(size_t(1) << 20);
  bool in_member = false;  // a member begun and not yet ended
  ~GzipStream() {
    if (file) std::fclose(file);
  }
};

ssize_t gzip_read(void* cookie, char* buf, size_t size) {
  auto* g = static_cast<GzipStream*>(cookie);
  const uint32_t room = uint32_t(std::min<size_t>(size, 1u << 30));
  uint32_t produced = 0;
  while (produced == 0) {
    if (g->state.avail_in == 0) {
      const size_t got = std::fread(g->in.data(), 1, g->in.size(), g->file);
      if (got == 0) {
        if (std::ferror(g->file) || g->in_member) {  // a read error, or the data ends inside a member
          errno = EIO;
          return -1;
        }
        return 0;
      }
      g->state.next_in = g->in.data();
      g->state.avail_in = uint32_t(got);
    }
    if (!g->in_member) {  // the next member: a fresh state, reading on where the last ended
      uint8_t* next = g->state.next_in;
      const uint32_t avail = g->state.avail_in;
      isal_inflate_init(&g->state);
      g->state.crc_flag = ISAL_GZIP;
      g->state.next_in = next;
      g->state.avail_in = avail;
      g->in_member = true;
    }
    g->state.next_out = reinterpret_cast<uint8_t*>(buf);
    g->state.avail_out = room;
    if (isal_inflate(&g->state) != ISAL_DECOMP_OK) {
      errno = EIO;
      return -1;
    }
    produced = room - g->state.avail_out;
    if (g->state.block_state == ISAL_BLOCK_FINISH) g->in_member = false;
  }
  return ssize_t(produced);
}
int gzip_close(void* cookie) {
  delete static_cast<GzipStream*>(cookie);
  return 0;
}

struct ZstdStream {
  FILE* file = nullptr;
  ZSTD_DStream* stream = nullptr;
  std::vector<uint8_t> in = std::vector<uint8_t>(ZSTD_DStreamInSize());
  ZSTD_inBuffer input{nullptr, 0, 0};
  size_t last = 0;  // ZSTD_decompressStream's last hint: 0 when a frame just ended
  ~ZstdStream() {
    if (stream) ZSTD_freeDStream(stream);
    if (file) std::fclose(file);
  }
};

ssize_t zstd_read(void* cookie, char* buf, size_t size) {
  auto* z = static_cast<ZstdStream*>(cookie);
  ZSTD_outBuffer out{buf, size, 0};
  while (out.pos == 0) {
    if (z->input.pos == z->input.size) {
      const size_t got = std::fread(z->in.data(), 1, z->in.size(), z->file);
      if (got == 0) {
        if (std::ferror(z->file) || z->last != 0) {  // a read error, or the data ends inside a frame
          errno = EIO;
          return -1;
        }
        return 0;
      }
      z->input = {z->in.data(), got, 0};
    }
    z->last = ZSTD_decompressStream(z->stream, &out, &z->input);
    if (ZSTD_isError(z->last)) {
      errno = EIO;
      return -1;
    }
  }
  return ssize_t(out.pos);
}
int zstd_close(void* cookie) {
  delete static_cast<ZstdStream*>(cookie);
  return 0;
}

}  // namespace

FILE* open_decompressed(const std::string& path, Compression c) {
  if (c == Compression::kGzip) {
    auto g = std::make_unique<GzipStream>();
    g->file = std::fopen(path.c_str(), "rb");
    if (!g->file) throw std::runtime_error(path + ": " + std::strerror(errno));
    FILE* f = fopencookie(g.get(), "r", cookie_io_functions_t{gzip_read, nullptr, nullptr, gzip_close});
    if (!f) throw std::runtime_error(path + ": fopencookie failed");
    g.release();
    return read_ahead(f);
  }
  if (c == Compression::kZstd) {
    auto z = std::make_unique<ZstdStream>();
    z->file = std::fopen(path.c_str(), "rb");
    if (!z->file) throw std::runtime_error(path + ": " + std::strerror(errno));
    z->stream = ZSTD_createDStream();
    if (!z->stream) throw std::runtime_error(path + ": cannot create a zstd stream");
    ZSTD_initDStream(z->stream);
    FILE* f = fopencookie(z.get(), "r", cookie_io_functions_t{zstd_read, nullptr, nullptr, zstd_close});
    if (!f) throw std::runtime_error(path + ": fopencookie failed");
    z.release();
    return read_ahead(f);
  }
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(path + ": " + std::strerror(errno));
  return f;
}

}  // namespace itchbench
