// An independent example gateway in C++17, written from itchbench's gateway contract
// (docs/gateway-contract.md) and its book semantics (docs/book-and-bbo.md) alone: it shares no
// code with itchbench but the white-box writer itchbench gives gateways to copy (--latency-log,
// below), and is built with make like a team's own gateway would be.
//
// It reads NASDAQ TotalView-ITCH 5.0 from a capture file (classic pcap of MoldUDP64 over UDP, or
// a binary ITCH file; either may be gzip'd) or live from a UDP socket, keeps a book per stock, and
// writes each BBO change to a TCP connection as a CSV line:
//
//     seq,stock,bid_px,bid_qty,ask_px,ask_qty
//
//     cpp-gateway --file PATH --bbo ADDR:PORT [--stock symbol] [--levels N|all] [--latency-log PATH]
//     cpp-gateway --udp ADDR:PORT --bbo ADDR:PORT [--stock symbol] [--levels N|all] [--latency-log PATH]
//
// With --levels N (1 to 64) it writes depth instead: after each book message that changed any of
// the stock's top N price levels a side, the whole top N, best first, empty levels 0,0:
// seq,stock,bid1_px,bid1_qty,...,bidN_px,bidN_qty,ask1_px,ask1_qty,...,askN_qty.
// With --levels all, a line for each price level a book message changed, its shares after it (0:
// the level is gone), a replace's old price first: seq,stock,side,price,shares (side B or S).
//
// stock is the stock locate, or with --stock symbol the stock's symbol from the session's stock
// directory (R messages), as many gateways write it.
//
// seq is the MoldUDP64 sequence number, or the message's 1-based position in a binary ITCH file.
// Given a multicast group as the UDP address, it joins it on the loopback interface. It stops at
// the end of the file, at the feed's end of session (count 0xFFFF), or on SIGTERM.
//
// With --latency-log PATH it is a white box (the contract's white_box = true): each message's read,
// decoded and book stamps go to itchbench's latency log, through gateway/log/whitebox/
// itchbench_stamps.h (linked beside this file), and itchbench reports its stages.
#include "itchbench_stamps.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

volatile std::sig_atomic_t stop_requested = 0;

uint16_t be16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
uint32_t be32(const uint8_t* p) { return uint32_t(be16(p)) << 16 | be16(p + 2); }
uint64_t be64(const uint8_t* p) { return uint64_t(be32(p)) << 32 | be32(p + 4); }

// Length of each ITCH 5.0 message by its type byte (type byte included); 0: not a type.
size_t itch_length(uint8_t type) {
    switch (type) {
        case 'S': return 12; case 'R': return 39; case 'H': return 25; case 'Y': return 20;
        case 'L': return 26; case 'V': return 35; case 'W': return 12; case 'K': return 28;
        case 'J': return 35; case 'h': return 21; case 'A': return 36; case 'F': return 40;
        case 'E': return 31; case 'C': return 36; case 'X': return 23; case 'D': return 19;
        case 'U': return 35; case 'P': return 44; case 'Q': return 40; case 'B': return 19;
        case 'I': return 50; case 'N': return 20; case 'O': return 48;
        default: return 0;
    }
}

// Writes whole lines to the BBO connection, a buffer at a time.
class BboOut {
public:
    BboOut(int fd, bool by_symbol) : fd_(fd), by_symbol_(by_symbol) { buffer_.reserve(1 << 16); }
    void name(uint16_t stock, const uint8_t* symbol) {
        std::string s(reinterpret_cast<const char*>(symbol), 8);
        s.erase(s.find_last_not_of(' ') + 1);
        names_[stock] = s;
    }
    void event(uint64_t seq, uint16_t stock, uint64_t bid_px, uint64_t bid_qty, uint64_t ask_px, uint64_t ask_qty) {
        event(seq, stock, {bid_px, bid_qty, ask_px, ask_qty});
    }
    // seq, the stock, then the numbers, as one CSV line.
    void event(uint64_t seq, uint16_t stock, const std::vector<uint64_t>& numbers) {
        auto named = names_.find(stock);
        buffer_ += std::to_string(seq) + ',';
        buffer_ += by_symbol_ && named != names_.end() ? named->second : std::to_string(stock);
        for (uint64_t x : numbers) buffer_ += ',' + std::to_string(x);
        buffer_ += '\n';
        if (buffer_.size() > (1 << 15)) flush();
    }
    // A depth event: the top N levels a side, price and shares each, bids then asks.
    void depth_event(uint64_t seq, uint16_t stock, const std::vector<uint64_t>& levels) {
        event(seq, stock, levels);
    }
    // One level's change (--levels all): seq,stock,side,price,shares.
    void level_event(uint64_t seq, uint16_t stock, char side, uint32_t price, uint64_t shares) {
        auto named = names_.find(stock);
        buffer_ += std::to_string(seq) + ',';
        buffer_ += by_symbol_ && named != names_.end() ? named->second : std::to_string(stock);
        buffer_ += std::string(",") + side + ',' + std::to_string(price) + ',' + std::to_string(shares) + '\n';
        if (buffer_.size() > (1 << 15)) flush();
    }
    void flush() {
        size_t at = 0;
        while (at < buffer_.size()) {
            ssize_t n = ::write(fd_, buffer_.data() + at, buffer_.size() - at);
            if (n <= 0) { std::perror("cpp-gateway: writing BBO"); std::exit(3); }
            at += size_t(n);
        }
        buffer_.clear();
    }

private:
    int fd_;
    bool by_symbol_;
    std::string buffer_;
    std::unordered_map<uint16_t, std::string> names_;  // the stock directory: locate -> symbol
};

struct Order { uint16_t stock; bool bid; uint32_t price; uint32_t shares; };

struct Quote {
    uint64_t bid_px = 0, bid_qty = 0, ask_px = 0, ask_qty = 0;
    bool operator!=(const Quote& o) const {
        return bid_px != o.bid_px || bid_qty != o.bid_qty || ask_px != o.ask_px || ask_qty != o.ask_qty;
    }
};

// Orders by reference; per stock, shares per price on each side; the last BBO (or depth) said per stock.
class Book {
public:
    // levels 0: BBO events; N: depth events of the top N levels a side; every_level: each level's changes.
    Book(BboOut& out, unsigned levels, bool every_level) : out_(out), levels_(levels), every_level_(every_level) {}

    void apply(uint64_t seq, const uint8_t* m) {
        int stock = -1;
        first_price_ = 0;
        switch (m[0]) {
            case 'A': case 'F': {
                uint8_t side = m[19];
                if ((side == 'B' || side == 'S') && add(be64(m + 11), be16(m + 1), side == 'B', be32(m + 32), be32(m + 20)))
                    stock = be16(m + 1);
                break;
            }
            case 'E': case 'C': case 'X': stock = reduce(be64(m + 11), be32(m + 19)); break;
            case 'D': {
                auto it = orders_.find(be64(m + 11));
                if (it != orders_.end()) stock = reduce(it->first, it->second.shares);
                break;
            }
            case 'U': {
                uint64_t old_ref = be64(m + 11), new_ref = be64(m + 19);
                auto it = orders_.find(old_ref);
                if (it != orders_.end() && (new_ref == old_ref || orders_.count(new_ref) == 0)) {
                    Order o = it->second;
                    first_price_ = o.price;
                    reduce(old_ref, o.shares);
                    add(new_ref, o.stock, o.bid, be32(m + 31), be32(m + 27));
                    stock = o.stock;
                }
                break;
            }
            case 'R': out_.name(be16(m + 1), m + 11); break;
            default: break;
        }
        if (stock >= 0) say(seq, uint16_t(stock));
    }

private:
    using Levels = std::map<uint32_t, uint64_t>;  // price -> aggregate shares
    struct Sides { Levels bids, asks; };

    bool add(uint64_t ref, uint16_t stock, bool bid, uint32_t price, uint32_t shares) {
        if (shares == 0 || !orders_.emplace(ref, Order{stock, bid, price, shares}).second) return false;
        Sides& s = books_[stock];
        (bid ? s.bids : s.asks)[price] += shares;
        return true;
    }

    int reduce(uint64_t ref, uint32_t shares) {
        auto it = orders_.find(ref);
        if (it == orders_.end()) return -1;
        Order& o = it->second;
        uint32_t cut = shares < o.shares ? shares : o.shares;
        Levels& side = o.bid ? books_[o.stock].bids : books_[o.stock].asks;
        auto level = side.find(o.price);
        level->second -= cut;
        if (level->second == 0) side.erase(level);
        o.shares -= cut;
        int stock = o.stock;
        if (o.shares == 0) orders_.erase(it);
        return stock;
    }

    // Every level: each price whose shares differ from what was last said of the stock, a replace's old price's
    // first.
    void say_levels(uint64_t seq, uint16_t stock) {
        const Sides& now = books_[stock];
        Sides& said = said_levels_[stock];
        for (int bid = 1; bid >= 0; --bid) {
            const Levels& a = bid ? said.bids : said.asks;
            const Levels& b = bid ? now.bids : now.asks;
            std::vector<std::pair<uint32_t, uint64_t>> changed;
            for (const auto& [price, shares] : b) {
                auto was = a.find(price);
                if (was == a.end() || was->second != shares) changed.emplace_back(price, shares);
            }
            for (const auto& [price, shares] : a)
                if (b.count(price) == 0) changed.emplace_back(price, 0);
            std::stable_sort(changed.begin(), changed.end(),
                             [&](const auto& x, const auto& y) { return x.first == first_price_ && y.first != first_price_; });
            for (const auto& [price, shares] : changed) out_.level_event(seq, stock, bid ? 'B' : 'S', price, shares);
        }
        said = now;
    }

    void say(uint64_t seq, uint16_t stock) {
        if (every_level_) return say_levels(seq, stock);
        const Sides& s = books_[stock];
        if (levels_ > 0) {  // price and shares of the top N levels a side, best first; empty ones 0, 0
            std::vector<uint64_t> now(4 * size_t(levels_), 0);
            size_t at = 0;
            for (auto it = s.bids.rbegin(); it != s.bids.rend() && at < 2 * size_t(levels_); ++it, at += 2)
                now[at] = it->first, now[at + 1] = it->second;
            at = 2 * size_t(levels_);
            for (auto it = s.asks.begin(); it != s.asks.end() && at < 4 * size_t(levels_); ++it, at += 2)
                now[at] = it->first, now[at + 1] = it->second;
            std::vector<uint64_t>& said = said_depth_[stock];
            if (said.empty()) said.assign(now.size(), 0);
            if (now != said) {
                said = now;
                out_.depth_event(seq, stock, now);
            }
            return;
        }
        Quote now;
        if (!s.bids.empty()) { now.bid_px = s.bids.rbegin()->first; now.bid_qty = s.bids.rbegin()->second; }
        if (!s.asks.empty()) { now.ask_px = s.asks.begin()->first; now.ask_qty = s.asks.begin()->second; }
        Quote& said = said_[stock];
        if (now != said) {
            said = now;
            out_.event(seq, stock, now.bid_px, now.bid_qty, now.ask_px, now.ask_qty);
        }
    }

    BboOut& out_;
    unsigned levels_;
    bool every_level_;
    uint32_t first_price_ = 0;  // the message's replace's old price: its change is said first
    std::unordered_map<uint64_t, Order> orders_;
    std::unordered_map<uint16_t, Sides> books_;
    std::unordered_map<uint16_t, Quote> said_;
    std::unordered_map<uint16_t, std::vector<uint64_t>> said_depth_;
    std::unordered_map<uint16_t, Sides> said_levels_;  // every level: the stock's book as last said
};

// Messages in sequence order: a duplicate or late one is dropped, a gap is skipped over.
class Feed {
public:
    // stamps: the white box's latency log, or null.
    Feed(Book& book, ib_latency_log* stamps) : book_(book), stamps_(stamps) {}

    // A packet (or a file's message) was read: its messages' read stamp.
    void received() {
        if (stamps_) read_ns_ = ib_now_ns();
    }

    void message(uint64_t seq, const uint8_t* m, size_t n) {
        if (seq < next_seq_) return;
        next_seq_ = seq + 1;
        const uint64_t decoded = stamps_ ? ib_now_ns() : 0;
        const bool valid = n > 0 && itch_length(m[0]) == n;
        if (valid) book_.apply(seq, m);
        if (stamps_) {
            const uint64_t stamps[3] = {read_ns_, decoded, ib_now_ns()};
            ib_latency_record(stamps_, seq, n > 0 ? char(m[0]) : '?', n >= 3 ? be16(m + 1) : 0,
                              valid ? 0 : IB_REJECTED, stamps);
        }
    }

    // One MoldUDP64 packet; false at the end of session.
    bool packet(const uint8_t* p, size_t n) {
        if (n < 20) return true;
        uint64_t seq = be64(p + 10);
        uint16_t count = be16(p + 18);
        if (count == 0xFFFF) return false;
        // The whole packet is framed before any of it is applied: one whose count its messages do not fill exactly
        // (cut short, or bytes left after them) is rejected whole, as MoldUDP64 validation does (docs/faults.md).
        size_t at = 20;
        for (uint16_t i = 0; i < count; ++i) {
            if (at + 2 > n || at + 2 + be16(p + at) > n) return true;
            at += 2 + be16(p + at);
        }
        if (at != n) return true;
        at = 20;
        for (uint16_t i = 0; i < count; ++i) {
            size_t len = be16(p + at);
            message(seq + i, p + at + 2, len);
            at += 2 + len;
        }
        return true;
    }

private:
    Book& book_;
    ib_latency_log* stamps_;
    uint64_t read_ns_ = 0;
    uint64_t next_seq_ = 0;
};

bool read_file(const char* path, std::vector<uint8_t>& data) {
    gzFile f = gzopen(path, "rb");  // reads plain files as they are
    if (!f) return false;
    uint8_t chunk[1 << 16];
    int n;
    while ((n = gzread(f, chunk, sizeof chunk)) > 0) data.insert(data.end(), chunk, chunk + n);
    bool ok = n == 0;
    gzclose(f);
    return ok;
}

// The UDP payload of one pcap record, or nullptr: Ethernet (VLAN too), Linux cooked, raw IPv4.
const uint8_t* udp_payload(const uint8_t* frame, size_t n, uint32_t link, size_t& payload_len) {
    size_t ip = 0;
    if (link == 1) {
        if (n < 14) return nullptr;
        uint16_t type = be16(frame + 12);
        ip = 14;
        if (type == 0x8100 && n >= 18) { type = be16(frame + 16); ip = 18; }
        if (type != 0x0800) return nullptr;
    } else if (link == 113) {
        if (n < 16 || be16(frame + 14) != 0x0800) return nullptr;
        ip = 16;
    } else if (link != 101 && link != 228) {
        return nullptr;
    }
    if (n < ip + 20 || frame[ip] >> 4 != 4 || frame[ip + 9] != 17) return nullptr;
    if (be16(frame + ip + 6) & 0x3FFF) return nullptr;  // a fragment
    size_t udp = ip + size_t(frame[ip] & 0x0F) * 4;
    if (n < udp + 8) return nullptr;
    size_t len = be16(frame + udp + 4);
    if (len < 8 || udp + len > n) return nullptr;
    payload_len = len - 8;
    return frame + udp + 8;
}

int run_file(const char* path, Feed& feed) {
    std::vector<uint8_t> data;
    if (!read_file(path, data)) { std::fprintf(stderr, "cpp-gateway: cannot read %s\n", path); return 2; }
    const uint8_t* d = data.data();
    uint32_t magic = data.size() >= 4 ? uint32_t(d[0]) | uint32_t(d[1]) << 8 | uint32_t(d[2]) << 16 | uint32_t(d[3]) << 24 : 0;
    bool pcap_le = magic == 0xA1B2C3D4 || magic == 0xA1B23C4D;
    bool pcap_be = magic == 0xD4C3B2A1 || magic == 0x4D3CB2A1;
    if (magic == 0x0A0D0D0A) { std::fprintf(stderr, "cpp-gateway: pcapng is not supported\n"); return 2; }
    if (pcap_le || pcap_be) {
        auto u32 = [&](size_t at) {
            return pcap_be ? be32(d + at) : uint32_t(d[at]) | uint32_t(d[at + 1]) << 8 | uint32_t(d[at + 2]) << 16 | uint32_t(d[at + 3]) << 24;
        };
        if (data.size() < 24) { std::fprintf(stderr, "cpp-gateway: %s: truncated pcap header\n", path); return 2; }
        uint32_t link = u32(20);
        size_t at = 24;
        while (at + 16 <= data.size()) {
            size_t len = u32(at + 8);
            if (at + 16 + len > data.size()) { std::fprintf(stderr, "cpp-gateway: %s: truncated record\n", path); return 1; }
            size_t payload_len = 0;
            const uint8_t* payload = udp_payload(d + at + 16, len, link, payload_len);
            if (payload) {
                feed.received();
                if (!feed.packet(payload, payload_len)) return 0;
            }
            at += 16 + len;
        }
        return 0;
    }
    // A binary ITCH file: a 2-byte big-endian length before each message; seq is its 1-based position.
    uint64_t seq = 0;
    for (size_t at = 0; at + 2 <= data.size();) {
        size_t len = be16(d + at);
        if (at + 2 + len > data.size()) { std::fprintf(stderr, "cpp-gateway: %s: truncated message\n", path); return 1; }
        feed.received();
        feed.message(++seq, d + at + 2, len);
        at += 2 + len;
    }
    return 0;
}

int run_udp(int sock, Feed& feed, BboOut& out) {
    std::vector<uint8_t> packet(65536);
    while (!stop_requested) {
        ssize_t n = ::recv(sock, packet.data(), packet.size(), 0);
        if (n < 0) continue;  // the receive timeout (or a signal): look at stop_requested again
        feed.received();
        bool more = feed.packet(packet.data(), size_t(n));
        out.flush();  // a packet's events go out with it
        if (!more) break;
    }
    return 0;
}

bool parse_addr(const std::string& text, sockaddr_in& addr) {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) return false;
    std::memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons(uint16_t(std::stoi(text.substr(colon + 1))));
    return inet_pton(AF_INET, text.substr(0, colon).c_str(), &addr.sin_addr) == 1;
}

int usage() {
    std::fprintf(stderr, "usage: cpp-gateway (--file PATH | --udp ADDR:PORT) --bbo ADDR:PORT [--stock symbol] "
                         "[--levels N|all] [--latency-log PATH]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string file, udp, bbo, stock = "locate", levels = "0", latency_log;
    if (argc % 2 == 0) return usage();  // options come in pairs
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string key = argv[i];
        if (key == "--file") file = argv[i + 1];
        else if (key == "--udp") udp = argv[i + 1];
        else if (key == "--bbo") bbo = argv[i + 1];
        else if (key == "--stock") stock = argv[i + 1];
        else if (key == "--levels") levels = argv[i + 1];
        else if (key == "--latency-log") latency_log = argv[i + 1];
        else return usage();
    }
    sockaddr_in bbo_addr{}, feed_addr{};
    if (file.empty() == udp.empty() || !parse_addr(bbo, bbo_addr) || (!udp.empty() && !parse_addr(udp, feed_addr)) ||
        (stock != "locate" && stock != "symbol") ||
        (levels != "all" && (levels.empty() || levels.size() > 2 ||
                             levels.find_first_not_of("0123456789") != std::string::npos || std::stoi(levels) > 64)))
        return usage();
    const bool every_level = levels == "all";
    std::signal(SIGTERM, [](int) { stop_requested = 1; });

    int feed_sock = -1;
    if (!udp.empty()) {  // bound before the BBO connection: itchbench takes the connection as "ready"
        feed_sock = ::socket(AF_INET, SOCK_DGRAM, 0);
        int rcvbuf = 8 << 20;
        timeval timeout{0, 50000};
        ::setsockopt(feed_sock, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
        ::setsockopt(feed_sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        const bool multicast = (ntohl(feed_addr.sin_addr.s_addr) >> 28) == 0xE;
        const in_addr group = feed_addr.sin_addr;
        if (multicast) feed_addr.sin_addr.s_addr = htonl(INADDR_ANY);  // a unicast answer to this socket comes too
        if (::bind(feed_sock, reinterpret_cast<sockaddr*>(&feed_addr), sizeof feed_addr) != 0) {
            std::perror("cpp-gateway: bind");
            return 2;
        }
        if (multicast) {  // joined on the loopback interface; only this socket's own groups delivered
            ip_mreq join{group, {htonl(INADDR_LOOPBACK)}};
            const int off = 0;
            if (::setsockopt(feed_sock, IPPROTO_IP, IP_ADD_MEMBERSHIP, &join, sizeof join) != 0 ||
                ::setsockopt(feed_sock, IPPROTO_IP, IP_MULTICAST_ALL, &off, sizeof off) != 0) {
                std::perror("cpp-gateway: joining the group");
                return 2;
            }
        }
    }
    int bbo_sock = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(bbo_sock, reinterpret_cast<sockaddr*>(&bbo_addr), sizeof bbo_addr) != 0) {
        std::perror("cpp-gateway: connect to the BBO collector");
        return 2;
    }
    BboOut out(bbo_sock, stock == "symbol");
    Book book(out, every_level ? 0 : unsigned(std::stoi(levels)), every_level);
    ib_latency_log stamps{};
    if (!latency_log.empty() &&
        ib_latency_open(&stamps, latency_log.c_str(), IB_STAGE_READ | IB_STAGE_DECODED | IB_STAGE_BOOK, "", "") != 0) {
        std::perror(("cpp-gateway: " + latency_log).c_str());
        return 2;
    }
    Feed feed(book, latency_log.empty() ? nullptr : &stamps);
    int rc = file.empty() ? run_udp(feed_sock, feed, out) : run_file(file.c_str(), feed);
    out.flush();
    ::close(bbo_sock);
    if (!latency_log.empty() && ib_latency_close(&stamps) != 0) {
        std::perror(("cpp-gateway: " + latency_log).c_str());
        return 1;
    }
    return rc;
}
