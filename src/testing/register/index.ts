/** TEST-ONLY replicated register app (ABD over enhanced CAS), for multi-node crash paths. */
export { registerApp, RegisterAppServer, RegisterErrorCodes, REGISTER_APP_DEFAULTS, REGISTER_HEADER_BYTES, CELL_BYTES, tagCompareMask, encodeCell, LOST_CELL, isLostCell, decodeCell, compareTags, type RegisterAppOptions, type Cell } from './app.js';
export { RegisterClient, parseRegisterWelcome, type RegisterNode, type RegisterFaults } from './client.js';
export { registerModel, type RegisterInput, type RegisterOutput } from './model.js';
