'use strict';
// A gate: how the binding bounds its calls on the thread pool (lib/calls.js).

/**
 * At most `slots` of something at once; the rest wait in a FIFO queue. `enter(start)` runs
 * `start` now, or queues it and returns a ticket `withdraw` can take back out of the queue;
 * whoever entered calls `leave()` once done, which starts the next in the queue.
 */
class Gate {
  #free;
  #queue = []; // tickets { start }, start null once withdrawn
  #head = 0;

  constructor(slots) {
    this.#free = slots;
  }

  enter(start) {
    if (this.#free > 0) {
      this.#free -= 1;
      start();
      return null;
    }
    const ticket = { start };
    this.#queue.push(ticket);
    return ticket;
  }

  leave() {
    while (this.#head < this.#queue.length) {
      const { start } = this.#queue[this.#head];
      this.#queue[this.#head++] = undefined;
      if (this.#head === this.#queue.length) {
        this.#queue.length = this.#head = 0;
      } else if (this.#head >= 1024 && 2 * this.#head >= this.#queue.length) {
        this.#queue.splice(0, this.#head); // a queue that never empties: drop the started
        this.#head = 0;
      }
      if (start) {
        start();
        return;
      }
    }
    this.#free += 1;
  }

  withdraw(ticket) {
    ticket.start = null;
  }
}

module.exports = { Gate };
