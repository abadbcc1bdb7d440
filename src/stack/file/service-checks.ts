import type { Layout } from '../../layout/layout-model.js';
import { resolvePorts } from './port-source-key.js';
import { readReadyKey } from './ready-key.js';
import { COMMAND_EXAMPLE, type ServiceRead } from './service-fields.js';

/*
 * The table of checks within one service that need more than one of its keys, run in order
 * once every key is read (service-fields.ts): a missing command, restart_limit without
 * restart, ready against handoff, instance against band, the band against the layout.
 */

/** What the checks know beyond the service: the stack's layout, and whether it was broken (reported). */
export interface LayoutSeen {
  readonly layout: Layout | undefined;
  readonly broken: boolean;
}

type ServiceCheck = (s: ServiceRead, layout: LayoutSeen) => void;

export const SERVICE_CHECKS: readonly ServiceCheck[] = [
  function commandGiven({ draft, read, label, reader }) {
    if (!read.has('command')) reader.add(draft.spec.line, `${label}: missing "command: ${COMMAND_EXAMPLE}"`);
  },
  function nodesListenEverywhere({ draft, keys, read }) {
    // Other nodes must reach it: listen on every address unless told otherwise.
    if (read.has('nodes') && !keys.has('host')) draft.spec.host = '0.0.0.0';
  },
  function limitNeedsRestart({ draft, read, label, reader }) {
    const at = read.get('restart_limit');
    if (at !== undefined && draft.spec.restart.policy !== 'on-failure') reader.add(at, `${label}: restart_limit needs "restart: on-failure"`);
  },
  function readyWithHandoff(s) {
    if (s.readyText === undefined) return;
    const ready = readReadyKey(s.readyText, s.draft.readyLine, s.label, s.draft, s.reader);
    if (ready) s.draft.spec.ready = ready;
  },
  function instanceNeedsBand({ draft, label, reader }) {
    if (!draft.instance || draft.source?.kind === 'band') return;
    reader.add(draft.instance.line, `${label}: instance needs "band: NAME" (it picks the band's instance window)`);
    draft.broken = true;
  },
  function bandInLayout({ draft, label, reader }, seen) {
    resolvePorts(draft, seen.layout, seen.broken, label, reader);
  },
];
