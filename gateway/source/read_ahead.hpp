// A slow stream (a decompressor) read on a thread of its own, a few blocks
// ahead of its reader. Decompressing a capture costs several times what the
// gateway does with the bytes (gzip ~0.8 s for a 5 M-message pcap against
// ~0.2 s of gateway work here); on the reader's thread it was in the
// gateway's measured time and between its stage stamps. On a thread of its
// own it runs beside the gateway, on the CPUs the hot thread was not pinned to.
#pragma once
#include <cstdio>

namespace itchbench {

// A FILE* that reads exactly what `slow` reads, end and errors included (the
// bytes before an error, then the error, as ferror); takes ownership of
// `slow`, which the returned stream's fclose closes after stopping the thread.
// Throws std::runtime_error (closing `slow`) if the stream cannot be made.
FILE* read_ahead(FILE* slow);

}  // namespace itchbench
