// queue: the C++ face (harel_transport.hpp) end to end: publishes GROUPS x PER_GROUP events
// (one batch per group), then drains the queue as one worker in batches of up to BATCH
// events of different groups (claim_many, then ack_and_claim_many: one commit per batch),
// giving every 7th event back once (nack) the first time it comes, and checks that each
// group's events came in order. It ends once a claim has waited WAIT seconds for nothing.
//
//   queue DATABASE [GROUPS [PER_GROUP]]
//
// Ends with "queue: N published, N acked, N retried, in order" (exit 0), or says what went
// wrong (exit 1).
//
// Build: c++ -std=c++17 queue.cpp $(pkg-config --cflags --libs harel_transport) -o queue
// or with CMake (examples/cpp/CMakeLists.txt): find_package(harel_transport CONFIG REQUIRED).

#include <harel_transport.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

constexpr std::size_t BATCH = 8;  // events claimed at once, each the head of its own group
constexpr double WAIT = 0.5;      // seconds a claim waits for something deliverable

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DATABASE [GROUPS [PER_GROUP]]\n", argv[0]);
    return 2;
  }
  const int groups = argc > 2 ? std::atoi(argv[2]) : 5;
  const int per_group = argc > 3 ? std::atoi(argv[3]) : 9;
  if (!harel::version_matches()) {
    std::fprintf(stderr, "queue: built with harel_transport %s, running with %.*s\n", HAREL_TRANSPORT_VERSION,
                 static_cast<int>(harel::version().size()), harel::version().data());
  }
  try {
    auto queue = harel::Transport::open(argv[1], harel::Options().busy_timeout(5.0));

    // Producer: one batch (one transaction, one commit) per group. The strings must
    // outlive the call: the Messages only point at them.
    for (int g = 0; g < groups; g++) {
      std::string group = "order-" + std::to_string(g);
      std::vector<std::string> events;
      for (int step = 0; step < per_group; step++) events.push_back("{\"step\":" + std::to_string(step) + "}");
      std::vector<harel::Message> batch;
      for (const auto &event : events) batch.emplace_back(group, event);
      queue.publish_many(batch);
    }

    // Worker: claim a batch (waiting up to WAIT seconds), handle it, ack what was handled
    // and claim the next batch in one transaction.
    std::map<std::string, int, std::less<>> next_step;
    std::set<long long> retried_once;
    long acked = 0, retried = 0;
    bool in_order = true;
    std::vector<harel::Lease> batch = queue.claim_many("cpp-worker", 30.0, BATCH, WAIT);
    while (!batch.empty()) {
      std::vector<harel::Lease> handled;
      for (auto &lease : batch) {
        if (lease.seq() % 7 == 0 && retried_once.insert(lease.seq()).second) {
          queue.nack(lease);  // give it back now; it is its group's head again
          retried++;
          continue;
        }
        // The event is {"step":N}; the group's steps must come 0, 1, 2, ...
        std::string event(lease.event());
        int step = std::atoi(event.c_str() + event.find(':') + 1);
        auto &expected = next_step[std::string(lease.group_id())];
        if (step != expected) in_order = false;
        expected = step + 1;
        handled.push_back(std::move(lease));
      }
      harel::AckedAndClaimed done = queue.ack_and_claim_many(handled, "cpp-worker", 30.0, BATCH);
      // A lost lease (HAREL_ERR_LEASE_LOST) would leave acked short of what was published.
      acked += std::count(done.outcomes.begin(), done.outcomes.end(), HAREL_OK);
      batch = std::move(done.leases);
      if (batch.empty()) batch = queue.claim_many("cpp-worker", 30.0, BATCH, WAIT);
    }
    for (const auto &[group, next] : next_step)
      if (next != per_group) in_order = false;
    if (static_cast<int>(next_step.size()) != groups) in_order = false;

    std::printf("queue: %d published, %ld acked, %ld retried, %s\n", groups * per_group, acked, retried,
                in_order ? "in order" : "OUT OF ORDER");
    return in_order && acked == groups * per_group ? 0 : 1;
  } catch (const harel::Error &e) {
    std::fprintf(stderr, "queue: %s\n", e.what());  // e.status() is the harel_status
    return 1;
  }
}
