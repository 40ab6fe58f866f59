#include "source/compressed_file.hpp"

#include <zlib.h>
#include <zstd.h>

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

// gzread handles concatenated members and reports corruption as -1.
ssize_t gzip_read(void* cookie, char* buf, size_t size) {
  auto* gz = static_cast<gzFile>(cookie);
  const int n = gzread(gz, buf, unsigned(std::min<size_t>(size, 1u << 30)));
  int status = Z_OK;
  gzerror(gz, &status);
  // A stream cut short ends with "unexpected end of file" (Z_BUF_ERROR) and no more data: an error, not an end.
  if (n < 0 || (n == 0 && status != Z_OK && status != Z_STREAM_END)) {
    errno = EIO;
    return -1;
  }
  return n;
}
int gzip_close(void* cookie) { return gzclose(static_cast<gzFile>(cookie)) == Z_OK ? 0 : -1; }

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
    gzFile gz = gzopen(path.c_str(), "rb");
    if (!gz) throw std::runtime_error(path + ": " + std::strerror(errno ? errno : ENOMEM));
    gzbuffer(gz, 1 << 20);
    FILE* f = fopencookie(gz, "r", cookie_io_functions_t{gzip_read, nullptr, nullptr, gzip_close});
    if (!f) {
      gzclose(gz);
      throw std::runtime_error(path + ": fopencookie failed");
    }
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
