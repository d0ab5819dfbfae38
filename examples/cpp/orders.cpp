// orders: publishing inside the application's transaction (harel_transport.hpp, harel::Tx).
// Each order's row and its "order.created" message are committed together or not at all:
// places ORDERS orders, each in one transaction (INSERT ... RETURNING id, then the publish),
// then one whose INSERT fails at the commit (a NULL customer), which takes its message with
// it. A worker then drains the queue: every order placed has its message, and no message
// is without its order.
//
//   orders DATABASE [ORDERS]
//
// Ends with "orders: N placed, N messages, the failed one kept nothing" (exit 0), or says
// what went wrong (exit 1).
//
// Build: c++ -std=c++17 orders.cpp $(pkg-config --cflags --libs harel_transport) -o orders
// or with CMake (examples/cpp/CMakeLists.txt): find_package(harel_transport CONFIG REQUIRED).

#include <harel_transport.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DATABASE [ORDERS]\n", argv[0]);
    return 2;
  }
  const int orders = argc > 2 ? std::atoi(argv[2]) : 10;
  try {
    auto queue = harel::Transport::open(argv[1], harel::Options().busy_timeout(5.0));
    // The application's table lives in the queue's database, written through the queue.
    queue.transaction([](harel::Tx &tx) {
      tx.execute("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, total REAL)");
    });

    // Producer: the row and its message, both or neither.
    std::set<std::int64_t> placed;
    for (int i = 0; i < orders; i++) {
      auto [id, published] = queue.transaction([&](harel::Tx &tx) {
        harel::Rows rows = tx.query("INSERT INTO orders (customer, total) VALUES (?1, ?2) RETURNING id",
                                    {"customer-" + std::to_string(i % 3), 10.0 + i});
        std::int64_t order = std::get<std::int64_t>(rows.at(0).at(0));
        tx.publish("order-" + std::to_string(order),
                   R"({"kind":"order.created","order":)" + std::to_string(order) + "}");
        return order;  // published[0].seq is its message's seq
      });
      placed.insert(id);
    }
    // One that fails at the commit: its message is not kept either.
    bool failed = false;
    try {
      queue.transaction([](harel::Tx &tx) {
        tx.publish("order-none", R"({"kind":"order.created","order":0})");
        tx.execute("INSERT INTO orders (customer, total) VALUES (?1, ?2)", {nullptr, 1.0});
      });
    } catch (const harel::Error &e) {
      failed = e.status() == HAREL_ERR_DATABASE;  // rolled back: nothing of it was kept
    }

    // Worker: each message names its order.
    std::set<std::int64_t> delivered;
    for (auto lease = queue.claim("orders-worker", 30.0); lease;
         lease = queue.ack_and_claim(*lease, "orders-worker", 30.0)) {
      std::string event(lease->event());
      delivered.insert(std::atoll(event.c_str() + event.rfind(':') + 1));
    }

    const bool consistent = failed && delivered == placed && static_cast<int>(placed.size()) == orders;
    std::printf("orders: %zu placed, %zu messages, %s\n", placed.size(), delivered.size(),
                consistent ? "the failed one kept nothing" : "INCONSISTENT");
    return consistent ? 0 : 1;
  } catch (const harel::Error &e) {
    std::fprintf(stderr, "orders: %s\n", e.what());  // e.status() is the harel_status
    return 1;
  }
}
