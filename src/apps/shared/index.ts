/**
 * What the apps share (PRISM-KV, Pilaf, PRISM-RS, PRISM-TX): the return-RPC mailbox (two receive
 * buffers per connection), the buffer-return desk and its client-side sender, the size classes
 * of an arena with their option check, how a mutant is named after its fault switch, and the KV
 * area's layout (PRISM-KV and the Pilaf-style baseline share it).
 */
export { Mailbox, MAILBOX_BUFFER_BYTES, type MailboxBuffer, type MailboxStats } from './mailbox.js';
export {
  encodeReturnBatch,
  encodeReceiptBatch,
  ReturnDesk,
  ReturnSender,
  RETURN_FLAG_IDEMPOTENT,
  RETURN_FLAG_RECEIPTS,
  returnHeaderBytes,
  type ReturnSenderConfig,
  type ReturnRound,
  type ReturnDeskConfig,
  type ReturnStats,
} from './returns.js';
export { sizeClassesCheck, type SizeClass } from './size-classes.js';
export { kebabName } from './mutants.js';
export { kvBase, KV_MAGIC, KV_LAYOUT_VERSION, KV_LAYOUT_VERSIONS, KV_GROUP_SLOTS, KV_PROBE_SLOTS_MAX, KV_HEADER_BYTES, KV_EPOCH_OFFSET, SLOT_BYTES, ITEM_HEADER_BYTES, FLAG_TOMBSTONE, FLAG_DEAD, MAX_CLASSES, RETURN_BATCH_MAX, KvErrorCodes, type KvGeometry, type KvLayoutOptions, KV_LAYOUT_DEFAULTS, validateLayoutOptions, computeKvGeometry, encodeKvHeader, decodeKvHeader, slotOffset, hashKey, homeSlot, probeSequence, inProbeSequence, slotRuns, probeStages, PROBE_STAGE_SLOTS, classOf, classFor, type Item, itemBytes, encodeItem, decodeItem, bytesEqual } from './kv-area.js';
