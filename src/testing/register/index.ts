/** TEST-ONLY replicated register app (ABD with out-of-place installs over enhanced CAS), for multi-node crash paths. */
export {
  registerApp, RegisterAppServer, RegisterErrorCodes, REGISTER_APP_DEFAULTS, REGISTER_HEADER_BYTES, CELL_BYTES, RECORD_BYTES, NO_RECORD, INITIAL_WORD, LOST_WORD,
  blockBytes, recordIndex, recordOffset, encodeWord, decodeWord, wordBytes, encodeRecord, decodeBlock, isLostWord, tagCompareMask, compareTags,
  type RegisterAppOptions, type Cell, type CellWord,
} from './app.js';
export { RegisterClient, parseRegisterWelcome, type RegisterNode, type RegisterFaults } from './client.js';
export { registerModel, type RegisterInput, type RegisterOutput } from './model.js';
