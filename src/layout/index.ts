/*
 * layout/: layout files (named bands of ports, instance windows, GPU windows) read and checked
 * against the host (ephemeral and reserved ranges, well-known ports), the fixes it suggests,
 * and the built-in default band. Pure but for reading the layout file.
 * May import: src/host (types, sysctls), src/util, src/errors.
 */
export type { Band, Layout, Finding, Fix, Severity } from './layout-model.js';
export { parseLayout, loadLayout } from './parse.js';
export { instanceWindow, instanceCount } from './windows.js';
export { defaultLayout, usableRanges, usableFloor, DEFAULT_SOURCE, DEFAULT_BAND } from './default-layout.js';
export { suggestBandRange, type RangeSuggestion } from './suggest.js';
export { checkLayout, SMALL_EPHEMERAL_PORTS, SYSCTL_CONF } from './check.js';
export { reservedPortsCommand, summarizeFindings } from './check-text.js';
export { LINUX_EPHEMERAL_END, LINUX_EPHEMERAL_START, portRangeCommand } from './ephemeral-fix.js';
