/** TEST-ONLY replicated register app (ABD with out-of-place installs over enhanced CAS), for multi-node crash paths of the explorer (src/testing/crash/register.ts). */
export {
  RegisterErrorCodes, REGISTER_HEADER_BYTES, CELL_BYTES, RECORD_BYTES, NO_RECORD, INITIAL_WORD, LOST_WORD,
  blockBytes, recordIndex, recordOffset, encodeWord, decodeWord, wordBytes, encodeRecord, decodeBlock, isLostWord, tagCompareMask, compareTags,
  type Cell, type CellWord,
} from './layout.js';
export { RegisterAppServer, type RegisterRecoveryReport } from './server.js';
export { registerApp, REGISTER_APP_DEFAULTS, type RegisterAppOptions } from './app.js';
export { RegisterClient, parseRegisterWelcome, type RegisterNode } from './client.js';
export { REGISTER_MUTANTS, findRegisterMutant, type RegisterFaults, type RegisterMutant } from './faults.js';
export { REGISTER_CELL_TABLE, REGISTER_WORD_VALUES, decideRegisterCell, matchingRegisterCellRows, allRegisterCellInputs, type RegisterCellInput, type RegisterCellRow } from './recovery.js';
