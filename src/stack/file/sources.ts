import type { PortSource } from '../../allocate/allocation-types.js';
import type { HostSysctls } from '../../host/host-map.js';
import { builtInLayout } from '../../layout/default-band.js';
import { DEFAULT_BAND } from '../../layout/default-layout.js';
import { bandSource } from '../../source/resolve.js';
import type { ServiceSpec, StackSpec } from './spec.js';

/**
 * Where replica `replica` of a service takes its port from (undefined: none). Replica r of a
 * windowed band takes window instance + r, or under `replicas: gpus` instance + g for its GPU g,
 * so jobs sharing a node (Slurm gives them disjoint GPUs) never share a window. Other sources are
 * shared by all replicas (leases keep their ports distinct); the built-in default band depends on `host`.
 */
export function replicaSource(stack: StackSpec, service: ServiceSpec, replica: number, host: HostSysctls, gpu?: number): PortSource | undefined {
  const p = service.source;
  switch (p.kind) {
    case 'none':
      return undefined;
    case 'port':
      return { kind: 'port', port: p.port };
    case 'range':
      return { kind: 'range', range: { lo: p.range.lo, hi: p.range.hi } };
    case 'default':
      return bandSource(builtInLayout(host, DEFAULT_BAND, 'the service a band, port or range', `service "${service.name}": `).bands[0]!);
    case 'band':
      return bandSource(p.band, p.band.window === undefined ? undefined : p.instance + (gpu ?? replica), stack.layout?.source);
  }
}
