/** A picture of a violation: the timeline page, and the shortener of failing histories. */
export { renderTimelineHtml, writeTimeline, escapeHtml, type TimelineInput, type TimelineOperation, type TimelineCrash } from './render.js';
export { shortenHistory, SHORTEN_DEFAULTS, type ShortenOptions, type ShortenResult } from './shorten.js';
export { kvLabel, timelineOperations, shortestNonLinearizable, kvWellFormed } from './history.js';
