// The C++ face of `make bench-faces` (bench/faces/run.py): the work of face.c through
// include/harel_transport.hpp (RAII leases, std::optional, exceptions). Usage:
//   face <path|:memory:> <claim_ack|ack_and_claim> [messages] [groups]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <harel_transport.hpp>

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <path|:memory:> <claim_ack|ack_and_claim> [messages] [groups]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1], mode = argv[2];
  const bool fused = mode == "ack_and_claim";
  if (!fused && mode != "claim_ack") {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  }
  const std::size_t n = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 4000;
  const std::size_t groups = argc > 4 ? std::strtoul(argv[4], nullptr, 10) : 50;
  try {
    auto t = harel::Transport::open(path, harel::Options().synchronous_full(false));
    // The strings outlive the batch: a harel::Message borrows them.
    std::vector<std::string> group(n), event(n);
    std::vector<harel::Message> batch;
    batch.reserve(n);
    for (std::size_t i = 0; i < n; i++) {
      char g[24];
      std::snprintf(g, sizeof g, "g-%03zu", i % groups);
      group[i] = g;
      event[i] = "{\"id\":\"ev-" + std::to_string(i) +
                 "\",\"kind\":\"bench\",\"created_time\":null,\"received_time\":null,\"data\":{\"n\":" +
                 std::to_string(i) + "}}";
      batch.emplace_back(group[i], event[i]);
    }
    t.publish_many(batch);

    std::size_t done = 0;
    const auto start = std::chrono::steady_clock::now();
    if (fused) {
      for (auto lease = t.claim("worker", 30.0); lease; lease = t.ack_and_claim(*lease, "worker", 30.0)) done++;
    } else {
      while (auto lease = t.claim("worker", 30.0)) {
        t.ack(*lease);
        done++;
      }
    }
    const std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
    if (done != n) {
      std::fprintf(stderr, "drained %zu of %zu messages\n", done, n);
      return 1;
    }
    std::printf("{\"face\":\"cpp\",\"mode\":\"%s\",\"store\":\"%s\",\"messages\":%zu,\"us_per_msg\":%.3f}\n",
                mode.c_str(), path == ":memory:" ? "memory" : "file", done, elapsed.count() / static_cast<double>(done));
  } catch (const harel::Error &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
