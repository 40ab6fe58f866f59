// A file mapped read-only and walked front to back without copying (a binary
// ITCH file, a classic pcap). As the walk goes, the pages behind it are
// handed back and the pages ahead of it are mapped in before it gets there,
// so that reading a file of any size keeps a window of it resident and the
// walk itself never takes a page fault.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace itchbench {

class MappedFile {
 public:
  // Throws std::runtime_error (with the path and errno text) if it cannot open.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

  // The walk has reached p and is done with the bytes before it. The file is
  // taken in windows of kWindowBytes: entering a window hands back the pages
  // before p (they stay in the page cache) and maps in the window after it,
  // so the one the walk is in and the next are always mapped (a pcap record
  // or an ITCH message is far shorter than a window). A fault in the walk
  // lands in whatever the reader times: in a pcap simulation, between a
  // datagram's read stamp and its decoding (its p99.9 went from 38 ns to
  // 1.3 us when the walk faulted its pages in).
  void advance_to(const uint8_t* p) {
    if (__builtin_expect(p >= next_window_, 0)) enter_window(p);
  }

 private:
  // Released every 16 MiB the walk ran as fast as every 64 (nasdaq-day, ITCH
  // file and pcap), and in 8 MiB windows mapped in ahead as fast again; two
  // windows of 8 stay resident, where up to 64 MiB did.
  static constexpr size_t kWindowBytes = size_t(8) << 20;
  void enter_window(const uint8_t* p);
  void map_in(size_t from, size_t to);  // [from, to) of the file, within it

  const uint8_t* data_ = nullptr;
  const uint8_t* released_ = nullptr;     // pages before this were handed back
  const uint8_t* next_window_ = nullptr;  // where the walk enters the next window
  size_t mapped_end_ = 0;                  // the file is mapped in up to here (from released_)
  size_t size_ = 0;
};

}  // namespace itchbench
