/** The soak's per-app drivers (the `soak` field of the crash-test records); src/testing/soak.ts runs them. */
export { KV_SOAK, RS_SOAK, TX_SOAK, type SoakEntry, type SoakOptions, type SoakReport } from './apps.js';
