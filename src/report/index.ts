/*
 * report/: renderings of the port space for people: the text of `berth doctor` and
 * `berth inspect`, and the self-contained HTML page (strips of the port space, markers,
 * findings). Pure: it draws a PortSpaceReport it is given (collect.ts assembles one).
 * May import: src/layout, src/allocate (lease types), src/host, src/util; never src/launch,
 * src/stack or src/cli.
 */
export type { PortSpaceReport } from './port-space-report.js';
export { renderText, type TextOptions } from './text.js';
export { renderHtml } from './html.js';
