/** The App contract every application implements (the apps themselves are under src/apps/<name>). */
export { guardedMicrotask, jsonBytes, parseJsonBytes, type App, type AppHost, type AppServer, type AcceptedClient, type AppProblem, type AppRecoveryReport } from './app.js';
export type { MutantExplore } from './app.js';
/** The clients' reconnect loop (PRISM-RS, PRISM-KV). */
export { untilReachable } from './reconnect.js';
/** Which app an area holds (the magic table) and the wrong-app refusal every app's open and format use. */
export { AppErrorCodes, AREA_MAGIC, AREA_IDENT_BYTES, identifyArea, describeHolder, refuseOtherApp, type AreaHolder } from './identify.js';
