/** src/node — the node host (DESIGN §6): one process, one PM file, one app, served over TCP. */
export { NodeHost, NODE_HOST_DEFAULTS, formatNodeFile, type FormatNodeFileOptions, type NodeHostOptions, type NodeRecovery, type NodeStartLine } from './host.js';
export { APP_RECORDS, APP_NAMES, appRecord, findAppRecord, type AppRecord, type AppName, type CrashAppName, NODE_APPS, NODE_APP_NAMES, NODE_APP_FLAGS, KV_SYSTEMS, NodeErrorCodes, appByName, nodeAppFlags, findNodeAppFlags, type NodeAppName, type NodeLayout, type NodeClientKind, type AnyApp, type NodeAppFlag, type NodeAppFlags, type NodeFlagValues } from './apps.js';
export { resolveAuthToken, checkAuthToken, AUTH_TOKEN_ENV, AuthErrorCodes } from './auth.js';
export { NodeMetrics, NODE_METRICS_DEFAULTS, authFailureLogger, type NodeMetricsOptions } from './metrics.js';
export { inspectFile, checkFile, InspectErrorCodes, type InspectReport, type CheckReport, type FileProblem } from './inspect.js';
