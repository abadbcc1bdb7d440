/* A layout as berth holds it once read (bands, their windows and instances), and what doctor's checks of it find. */

import type { PortRange } from '../host/host-map.js';

export interface Band extends PortRange {
  name: string;
  /** Ports per instance window; instance i gets lo+i*window … lo+i*window+window-1. */
  window?: number;
  /** 1-based line of the band in its file, when it came from a file. */
  line?: number;
}

export interface Layout {
  /** File the layout was read from, or "<default>" for the built-in one. */
  source: string;
  bands: Band[];
}

export type Severity = 'error' | 'warning' | 'info';

/** One result of checking a layout against a host (berth doctor). */
export interface Finding {
  severity: Severity;
  code: string; // stable machine id, e.g. "band-in-ephemeral"
  message: string;
  band?: string;
  /** Ports concerned, as ranges. */
  ranges?: PortRange[];
  /** What to do: each entry a complete alternative fix. */
  fixes?: Fix[];
}

export type Fix =
  | { kind: 'sysctl'; command: string; description: string }
  | { kind: 'band-range'; band: string; range: PortRange; description: string };
