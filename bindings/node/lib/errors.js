'use strict';
// The binding's errors: a HarelError with the library's status name as its `code`.

const STATUS = Object.freeze({
  HAREL_OK: 0,
  HAREL_EMPTY: 1,
  HAREL_ERR_ARGUMENT: -1,
  HAREL_ERR_DATABASE: -2,
  HAREL_ERR_BUSY: -3,
  HAREL_ERR_LEASE_LOST: -4,
  HAREL_ERR_CONNECT: -5,
  HAREL_ERR_INTERRUPTED: -6,
  HAREL_ERR_PANIC: -99,
});

class HarelError extends Error {
  /**
   * @param {string} code e.g. 'HAREL_ERR_LEASE_LOST'
   * @param {string} message
   * @param {{ status?: number, cause?: unknown }} [extra]
   */
  constructor(code, message, extra = {}) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'HarelError';
    this.code = code;
    // The library's harel_status; undefined for the binding's own codes (HAREL_ERR_CLOSED,
    // HAREL_ERR_LOAD).
    this.status = extra.status;
  }
}

function argumentError(message, cause) {
  return new HarelError('HAREL_ERR_ARGUMENT', message, { status: STATUS.HAREL_ERR_ARGUMENT, cause });
}

function closedError(what) {
  return new HarelError('HAREL_ERR_CLOSED', `${what}: the transport is closed`);
}

module.exports = { STATUS, HarelError, argumentError, closedError };
