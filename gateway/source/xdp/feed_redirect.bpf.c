// XDP program of the af_xdp source: the feed's UDP datagrams (IPv4, to
// the configured port, unfragmented) go to the AF_XDP socket of their
// receive queue, each with its hook time over its first 8 bytes; every
// other frame (ARP, other ports, IPv6, fragments) goes on to the kernel.
// libxdp's default program would take every frame, ARP included.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "xdp/feed_redirect_shared.h"

struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, 64);
  __type(key, __u32);
  __type(value, __u32);
} xsks SEC(".maps");

// [0]: the feed's UDP port, host order; set by the source after load.
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} config SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, XDP_FEED_COUNTERS);
  __type(key, __u32);
  __type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 which) {
  __u64* c = bpf_map_lookup_elem(&counters, &which);
  if (c) *c += 1;
}

SEC("xdp")
int feed_redirect(struct xdp_md* ctx) {
  void* data = (void*)(long)ctx->data;
  void* end = (void*)(long)ctx->data_end;
  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP)) goto other;
  struct iphdr* ip = (void*)(eth + 1);
  if ((void*)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl < 5) goto other;
  if (ip->frag_off & bpf_htons(0x3FFF)) goto other;  // more fragments, or an offset: not one whole datagram
  struct udphdr* udp = (void*)ip + ip->ihl * 4;
  if ((void*)(udp + 1) > end) goto other;
  __u32 key = 0;
  __u32* port = bpf_map_lookup_elem(&config, &key);
  if (!port || udp->dest != bpf_htons((__u16)*port)) goto other;

  count(XDP_FEED_FRAMES);
  // No socket on this queue: the kernel's own stack gets it, and the count says so.
  long action = bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
  if (action == XDP_REDIRECT) {
    // The receive stamp: CLOCK_MONOTONIC at the hook, over the frame's first 8 bytes (its destination address and
    // part of its source's), which the source does not read. Not in the metadata before the frame: some kernels
    // refuse bpf_xdp_adjust_meta to this program (6.18 on a Firecracker VM, 2026-12-07). A frame passed to the
    // kernel keeps its addresses.
    *(__u64*)data = bpf_ktime_get_ns();
    count(XDP_FEED_REDIRECTED);
  } else {
    count(XDP_FEED_NO_SOCKET);
  }
  return (int)action;
other:
  count(XDP_OTHER_FRAMES);
  return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
