'use strict';
// Raw memory for the out-parameters of the calls on the pool (lib/calls.js): each call the
// gate lets through takes a slot, its `harel_error *err` and (for a claim) its
// `harel_lease *out`, and passes their addresses, which koffi hands to C as they are. A JS
// array instead costs koffi an allocation and a write-back per call, and a claim's lease
// pointer would come back as a BigInt.

const koffi = require('koffi');

const SLOT_WORDS = 4; // two 64-bit pointers, err then out, as 32-bit words (little-endian)
const TWO_32 = 2 ** 32;

class Slots {
  #words;
  #base; // the memory's address, as a Number (user-space addresses are below 2^53)
  #free;

  /** `count` slots: as many as calls can be issued at once (the gate's bound). */
  constructor(count) {
    // An ArrayBuffer of its own: allocated apart from V8's heap, aligned, never moved.
    this.#words = new Uint32Array(new ArrayBuffer(count * SLOT_WORDS * 4));
    this.#base = Number(koffi.address(this.#words));
    this.#free = Array.from({ length: count }, (_, i) => i);
  }

  /**
   * A free slot, both pointers NULL (the library requires *err == NULL on entry). There is
   * always one: the gate lets no more calls through than there are slots, and a call
   * gives its slot back before it leaves the gate.
   */
  take() {
    const slot = this.#free.pop();
    this.#words.fill(0, slot * SLOT_WORDS, slot * SLOT_WORDS + SLOT_WORDS);
    return slot;
  }

  /** The slot's call is over, its pointers read: the slot is free again. */
  give(slot) {
    this.#free.push(slot);
  }

  errAddress(slot) {
    return this.#base + slot * SLOT_WORDS * 4;
  }

  outAddress(slot) {
    return this.#base + slot * SLOT_WORDS * 4 + 8;
  }

  /** The harel_error * the call wrote, as a Number; 0 for NULL. */
  err(slot) {
    return this.#pointer(slot * SLOT_WORDS);
  }

  /** The pointer the call wrote into its out-parameter, as a Number; 0 for NULL. */
  out(slot) {
    return this.#pointer(slot * SLOT_WORDS + 2);
  }

  #pointer(word) {
    return this.#words[word] + this.#words[word + 1] * TWO_32;
  }
}

module.exports = { Slots };
