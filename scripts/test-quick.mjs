#!/usr/bin/env node
// `npm run test:quick`: the fast subset for the edit-test loop. Pure logic on fixtures
// (parsers, planners, renderers, property tests): no build, no child berth, no network
// namespace, no servers; well under a minute on 2 cores. `npm test` runs everything.
// A test file named here that no longer exists fails the run (keep the list true).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const QUICK = [
  'allocate-block-plan', 'allocate-plan',
  'host-owners', 'host-socket-filter', 'host-socket-table', 'host-sysctl',
  'launch-lifecycle', 'launch-poller', 'launch-redact', 'launch-units',
  'layout-check', 'layout-default', 'layout-examples', 'layout-parse', 'layout-windows',
  'property-duration', 'property-hostlist', 'property-layout', 'property-socket-table',
  'report-geometry', 'report-html', 'report-text',
  'slurm-env', 'slurm-hostlist',
  'stack-file-graph', 'stack-file-load', 'stack-file-load-property', 'stack-file-placeholders', 'stack-file-placeholders-ports',
  'stack-file-placeholders-property', 'stack-file-ports', 'stack-file-references', 'stack-file-replica-context', 'stack-file-spread', 'stack-file-templates', 'stack-file-templates-render',
  'stack-file-template-bounds', 'stack-record-status-view', 'stack-schema',
  'house-rules', 'test-prerequisites', 'yaml-merge',
].map((n) => `test/${n}.test.ts`);

const gone = QUICK.filter((f) => !existsSync(f));
if (gone.length > 0) {
  console.error(`test:quick: no such test file: ${gone.join(', ')} (update scripts/test-quick.mjs)`);
  process.exit(1);
}
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...QUICK, ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(r.status ?? 1);
