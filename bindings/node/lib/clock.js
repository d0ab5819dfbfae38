'use strict';
// The JS clock of Transport.open's `clock` option.

const koffi = require('koffi');
const { argumentError } = require('./errors');
const { describe } = require('./args');

/**
 * A JS clock for the library without calling JavaScript from a pool thread. koffi could
 * run a registered JS callback for the C clock: the pool thread would wait for the main
 * thread to run it. But a process that dies of an uncaught exception joins the pool
 * threads before exiting, and one of them waiting for the dead main thread hangs it
 * forever. So the JS clock is read on the main thread just before each call and written,
 * as text, into a small C buffer; the C clock is libc's `double atof(const char *)`
 * with that buffer as its ctx. The text is exact: the shortest decimal digits of the
 * double as an integer with an exponent ("17000000005e-1"), which strtod rounds back to
 * the same double, and no decimal point, so no locale can change it.
 *
 * One buffer per transport, so the calls that read the clock (publish, publishMany,
 * publishWith, publishManyWith, claim, ackAndClaim, ack, nack, deadLetter, redrive,
 * release, stats, groups) go one at a time on a transport with a JS clock: were two in
 * flight, writing the second's time on the main thread could tear the first's read of it on
 * a pool thread, and the first could read the second's time. (A publish reads it too: the
 * library stamps each message with its publish time.) purgeDead, purgeGroup, purge, peek,
 * deadLetters and archive never read it: they stay concurrent. Without a JS clock every call is
 * concurrent.
 */
const CELL_SIZE = 48;
const CELL_TYPE = koffi.array('char', CELL_SIZE);

class ClockCell {
  constructor(clock) {
    this.clock = clock;
    this.ptr = koffi.alloc('char', CELL_SIZE);
  }

  /** Reads the JS clock and stores its time for the next call. */
  tick() {
    koffi.encode(this.ptr, CELL_TYPE, numberText(this.read()));
  }

  /** The JS clock's time, checked to be a number. */
  read() {
    let now;
    try {
      now = this.clock();
    } catch (e) {
      throw argumentError(`the clock threw: ${e instanceof Error ? e.message : String(e)}`, e);
    }
    if (typeof now !== 'number') {
      throw argumentError(`the clock returned ${describe(now)}; it must return epoch seconds as a number`);
    }
    return now;
  }

  free() {
    if (this.ptr !== null) koffi.free(this.ptr);
    this.ptr = null;
  }
}

/** `x` as text that C's strtod reads back as exactly `x`, without a decimal point. */
function numberText(x) {
  if (Number.isNaN(x)) return 'nan'; // the library rejects a non-finite or negative time
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (Object.is(x, -0)) return '-0';
  const [mantissa, exponent] = x.toExponential().split('e'); // shortest round-trip digits
  const decimals = (mantissa.split('.')[1] || '').length;
  return `${mantissa.replace('.', '')}e${Number(exponent) - decimals}`;
}

module.exports = { ClockCell };
