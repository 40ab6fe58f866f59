// What the XDP program (feed_redirect.bpf.c) and the af_xdp source share:
// the indices of its per-CPU counters.
#pragma once

enum {
  XDP_FEED_FRAMES = 0,      // frames of the feed seen at the hook
  XDP_FEED_REDIRECTED = 1,  // of those, handed to the socket's queue (it may still drop them: ring full)
  XDP_FEED_NO_SOCKET = 2,   // of those, no socket bound on their queue: passed to the kernel
  XDP_OTHER_FRAMES = 3,     // everything else, passed to the kernel
  XDP_FEED_COUNTERS = 4,
};
