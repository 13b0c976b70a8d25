/**
 * What the apps share (PRISM-KV, Pilaf, PRISM-RS, PRISM-TX): the return-RPC mailbox (two receive
 * buffers per connection), the buffer-return desk and its client-side sender, the size classes
 * of an arena with their option check, and how a mutant is named after its fault switch.
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
