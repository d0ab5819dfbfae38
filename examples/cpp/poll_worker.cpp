// poll_worker: the C++ face's worker on a poll() loop, with no thread blocked in a claim:
// the queue's readiness descriptor (harel::Watch) is polled beside a pipe that a signal
// handler writes to (SIGINT, SIGTERM: stop); a loop of your own (epoll, Boost.Asio's
// posix::stream_descriptor, libuv's uv_poll) takes the descriptor the same way.
//
//   poll_worker DATABASE [MESSAGES]
//
// When the descriptor polls readable, the worker calls queue.rearm(watch): false, nothing
// to claim yet (the descriptor is clear until a commit, or a lease's or a park's end, rings
// it); true, it claims batches without waiting (claim_many with wait 0), acking each batch
// and claiming the next in one transaction (ack_and_claim_many), until a claim finds
// nothing; then it polls again.
//
// So that a run shows it all on its own, a producer thread with a Transport of its own
// publishes MESSAGES events (default 150) into GROUPS groups, a batch at a time with a pause
// between; every 7th event fails the first time it comes and is nacked with a delay of
// RETRY_DELAY seconds (its group parks; the watch rings at the park's end). The worker stops
// once every event is acked and checks that each group's events came in order: exit 0 and
// "poll_worker: N published, N acked, N retried, N wakes, in order". A signal or the
// deadline (DEADLINE seconds) stops it early: exit 1.
//
// Build: c++ -std=c++17 poll_worker.cpp $(pkg-config --cflags --libs harel_transport) -pthread
// (Linux only, as the watch is), or with CMake (examples/cpp/CMakeLists.txt).

#include <harel_transport.hpp>

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr const char *WORKER = "poll-worker";
constexpr double VISIBILITY = 30.0;  // seconds to handle an event before another worker may get it
constexpr double RETRY_DELAY = 0.2;  // seconds a failed event's group waits before it comes again
constexpr std::size_t BATCH = 16;    // events claimed at once, each the head of its own group
constexpr int GROUPS = 6;            // the producer's groups
constexpr int PUBLISH_BATCH = 5;     // events the producer publishes at once
constexpr int DEADLINE = 120;        // seconds the run may take

int stop_pipe[2] = {-1, -1};  // the signal handler writes a byte: the loop stops

// Stops the producer and joins its thread however the scope ends.
struct Joined {
  std::thread &thread;
  std::atomic<bool> &stopping;
  ~Joined() {
    stopping = true;
    if (thread.joinable()) thread.join();
  }
};

// Another part of the program, with a Transport of its own: publishes `messages` events,
// {"step":N} in each group, PUBLISH_BATCH at a time (one commit each).
void produce(const char *database, int messages, std::atomic<int> &published, std::atomic<bool> &failed,
             const std::atomic<bool> &stopping) {
  try {
    auto queue = harel::Transport::open(database);
    std::vector<int> next_step(GROUPS, 0);
    while (published < messages && !stopping) {
      std::vector<std::string> groups, events;
      for (int i = published; i < messages && groups.size() < PUBLISH_BATCH; i++) {
        const int g = i % GROUPS;
        groups.push_back("order-" + std::to_string(g));
        events.push_back("{\"step\":" + std::to_string(next_step[static_cast<std::size_t>(g)]++) + "}");
      }
      std::vector<harel::Message> batch;  // points at the strings above, which outlive the call
      for (std::size_t i = 0; i < groups.size(); i++) batch.emplace_back(groups[i], events[i]);
      queue.publish_many(batch);
      published += static_cast<int>(batch.size());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  } catch (const harel::Error &e) {
    std::fprintf(stderr, "producer: %s\n", e.what());
    failed = true;
  }
}

}  // namespace

extern "C" void poll_worker_on_signal(int) {
  const int saved = errno;
  const char byte = 's';
  if (write(stop_pipe[1], &byte, 1) < 0) {  // async-signal-safe; a full pipe stops anyway
  }
  errno = saved;
}

int main(int argc, char **argv) {
  const int messages = argc > 2 ? std::atoi(argv[2]) : 150;
  if (argc < 2 || messages < 1) {
    std::fprintf(stderr, "usage: %s DATABASE [MESSAGES]\n", argv[0]);
    return 2;
  }
  if (pipe(stop_pipe) != 0) {
    std::perror("pipe");
    return 1;
  }
  signal(SIGINT, poll_worker_on_signal);
  signal(SIGTERM, poll_worker_on_signal);

  std::atomic<int> published{0};
  std::atomic<bool> producer_failed{false}, producer_stopping{false};
  long acked = 0, retried = 0, wakes = 0;
  bool in_order = true, stopped = false;
  try {
    auto queue = harel::Transport::open(argv[1]);
    harel::Watch watch = queue.watch();  // any group: min_priority 0, no routing keys
    std::thread producer(produce, argv[1], messages, std::ref(published), std::ref(producer_failed),
                         std::cref(producer_stopping));
    Joined joined{producer, producer_stopping};

    std::vector<int> next_step(GROUPS, 0);
    std::set<long long> failed_once;
    // Handles a batch: the events done go to `done`, the failed ones back (nack: their group
    // parks for RETRY_DELAY).
    auto handle = [&](std::vector<harel::Lease> &batch, std::vector<harel::Lease> &done) {
      for (auto &lease : batch) {
        if (lease.seq() % 7 == 0 && failed_once.insert(lease.seq()).second) {
          queue.nack(lease, RETRY_DELAY);
          retried++;
          continue;
        }
        const std::string group(lease.group_id()), event(lease.event());
        const int g = std::atoi(group.c_str() + group.find('-') + 1);
        const int step = std::atoi(event.c_str() + event.find(':') + 1);
        if (g < 0 || g >= GROUPS || step != next_step[static_cast<std::size_t>(g)]) in_order = false;
        else next_step[static_cast<std::size_t>(g)]++;
        done.push_back(std::move(lease));
      }
    };

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(DEADLINE);
    pollfd fds[2] = {{watch.fd(), POLLIN, 0}, {stop_pipe[0], POLLIN, 0}};
    while (acked < messages && !stopped) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        std::fprintf(stderr, "poll_worker: not done within %d s\n", DEADLINE);
        stopped = true;
        break;
      }
      const int n = poll(fds, 2, static_cast<int>(left.count()));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        std::perror("poll");
        stopped = true;
        break;
      }
      if (fds[1].revents & POLLIN) {
        std::fprintf(stderr, "poll_worker: signalled: stopping\n");
        stopped = true;
        break;
      }
      if (!(fds[0].revents & POLLIN)) continue;
      wakes++;
      if (!queue.rearm(watch)) continue;  // nothing yet: poll again
      // Work may be there: claim without waiting until nothing comes; each batch's acks and
      // the next batch's claim in one transaction.
      std::vector<harel::Lease> batch = queue.claim_many(WORKER, VISIBILITY, BATCH);
      while (!batch.empty()) {
        std::vector<harel::Lease> done;
        handle(batch, done);
        harel::AckedAndClaimed next = queue.ack_and_claim_many(done, WORKER, VISIBILITY, BATCH);
        for (harel_status outcome : next.outcomes)
          if (outcome == HAREL_OK) acked++;  // HAREL_ERR_LEASE_LOST: another worker has it
        batch = std::move(next.leases);
      }
    }
    producer_stopping = true;  // done already, or (stopped early) after the batch in hand
    producer.join();
    for (int g = 0; g < GROUPS && !stopped; g++)  // every group's events, all of them
      if (next_step[static_cast<std::size_t>(g)] != messages / GROUPS + (g < messages % GROUPS ? 1 : 0))
        in_order = false;
  } catch (const harel::Error &e) {
    std::fprintf(stderr, "poll_worker: %s\n", e.what());  // e.status() is the harel_status
    return 1;
  }
  std::printf("poll_worker: %d published, %ld acked, %ld retried, %ld wakes, %s\n", published.load(), acked,
              retried, wakes, in_order ? "in order" : "OUT OF ORDER");
  return !stopped && !producer_failed && in_order && acked == messages && published == messages ? 0 : 1;
}
