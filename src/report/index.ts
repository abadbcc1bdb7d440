// Renderings of the port space: the text of doctor/inspect, and the self-contained HTML page.
export type { PortSpaceReport } from './types.js';
export { renderText, type TextOptions } from './text.js';
export { renderHtml } from './html.js';
export { renderStrip, zoomTargets, type StripSpec } from './strip.js';
export {
  assignLanes, bandWindows, ephemeralOverlap, groupByColumn, labelSpan, laneCount, locatePort, makeScale, niceTicks, portCenterX,
  portX, pxPerPort, rangeRect, textWidth, xToPort, zoomDomain, PORT_MAX, PORT_MIN, type Rect, type Scale, type Span,
} from './geometry.js';
export { cleanText, formatArgv, socketOwnerText } from './format.js';
