/** src/demo — the PM-only writer of `pmrpc demo pmem-crash` and the reader that judges its records after a kill. */
export { runPmemWriter, readRecord, encodeRecord, recordValue, RECORD_BYTES, type RecordState } from './pmem-crash.js';
