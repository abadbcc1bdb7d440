/**
 * examples/layouts/nemo-rl.yaml: NeMo RL's bands after it moved everything below 9000.
 * `berth doctor` for real (the CLI, in network namespaces) on a host whose ephemeral range
 * starts at 9000, on a default host, and on one starting at 8500 (where the vLLM band's top
 * windows become exposed); what it says must be what examples/layouts/README.md shows.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderSection } from '../examples/layouts/render-doctor.js';
import { loadLayout } from '../src/layout/index.js';
import { berth, tempStateDir } from './helpers/cli.js';
import { requireNetns } from './helpers/netns.js';

const LAYOUT = 'examples/layouts/nemo-rl.yaml';

interface Finding {
  severity: string;
  code: string;
  band?: string;
  message: string;
}

async function doctor(ephemeral: string): Promise<{ code: number | null; findings: Finding[]; text: string }> {
  const env = { BERTH_STATE_DIR: tempStateDir(), SLURM_JOB_ID: undefined, SLURM_STEP_GPUS: undefined, SLURM_JOB_GPUS: undefined };
  const j = await berth(['doctor', '--layout', LAYOUT, '--json'], { netns: { ephemeral }, env });
  const t = await berth(['doctor', '--layout', LAYOUT], { netns: { ephemeral }, env });
  assert.equal(j.code, t.code, 'text and JSON agree on the verdict');
  return { code: j.code, findings: (JSON.parse(j.stdout) as { findings: Finding[] }).findings, text: t.stdout };
}

const codes = (fs: Finding[]) => fs.map((f) => (f.band ? `${f.code}:${f.band}` : f.code));
const NOTES = ['band-service-ports:master', 'band-service-ports:ray-workers', 'band-service-ports:generation', 'band-service-ports:gym', 'band-service-ports:vllm'];
const OK = ['band-ok:ray-head', 'band-ok:master', 'band-ok:ray-workers', 'band-ok:generation', 'band-ok:gym', 'band-ok:vllm'];

/** The README section's finding lines, as "- **sev** `code`: message". */
function readmeLines(hostKey: string): string[] {
  return renderSection('nemo-rl.yaml', hostKey).split('\n').filter((l) => l.startsWith('- **'));
}
// The README renders the file as nemo-rl.yaml; the CLI was given examples/layouts/nemo-rl.yaml.
const asLine = (f: Finding) => `- **${f.severity}** \`${f.code}\`: ${f.message.replaceAll(`${LAYOUT}:`, 'nemo-rl.yaml:')}`;

test('nemo-rl.yaml: the bands NeMo RL uses, all below 9000', () => {
  assert.deepEqual(loadLayout(LAYOUT).bands.map((b) => [b.name, b.lo, b.hi, b.window]), [
    ['ray-head', 1200, 1299, undefined],
    ['master', 1400, 1999, undefined],
    ['ray-workers', 2000, 2999, undefined],
    ['generation', 3000, 4999, undefined],
    ['gym', 5000, 5999, undefined],
    ['vllm', 7000, 8999, 100],
  ]);
});

test('doctor on a host whose ephemeral range starts at 9000: clean (exit 0), the low-range warning, notes on service ports; as the README shows', async (t) => {
  if (!requireNetns(t)) return;
  const r = await doctor('9000 65499');
  assert.equal(r.code, 0, r.text);
  assert.deepEqual(codes(r.findings), ['host-ranges', 'ephemeral-low', ...OK, ...NOTES]);
  assert.deepEqual(r.findings.map(asLine), readmeLines('ephemeral-9000'));
  assert.match(r.text, /8000 \(vLLM OpenAI server/);
});

test('doctor on a default host (32768-60999): clean, no warning; as the README shows', async (t) => {
  if (!requireNetns(t)) return;
  const r = await doctor('32768 60999');
  assert.equal(r.code, 0, r.text);
  assert.deepEqual(codes(r.findings), ['host-ranges', ...OK, ...NOTES]);
  assert.deepEqual(r.findings.map(asLine), readmeLines('linux-default'));
});

test('doctor on a host whose ephemeral range starts at 8500: the vLLM band is exposed (exit 1), windows 15-19 named, both fixes', async (t) => {
  if (!requireNetns(t)) return;
  const r = await doctor('8500 65499');
  assert.equal(r.code, 1, r.text);
  const f = r.findings.find((x) => x.code === 'band-in-ephemeral');
  assert.equal(f?.band, 'vllm');
  assert.match(f!.message, /500 of its 2000 ports \(8500-8999\)/);
  assert.match(f!.message, /instances 15-19 of 20 are exposed/);
  assert.match(r.text, /sysctl -w net\.ipv4\.ip_local_reserved_ports=8500-8999/);
  assert.equal(r.findings.filter((x) => x.severity === 'error').length, 1, 'only the vLLM band');
});

test('nemo-rl-stack.yaml loads: engine replica r takes window r of the vLLM band as http + a block of the rest', async () => {
  // Loaded here only: the doctor tests above need nothing of the stack code.
  const { loadStack } = await import('../src/stack/file/load.js');
  const s = loadStack('examples/layouts/nemo-rl-stack.yaml');
  const engine = s.services.find((x) => x.name === 'engine');
  assert.ok(engine);
  assert.deepEqual(engine.ports, [
    { name: 'http', kind: 'single' },
    { name: 'dist', kind: 'window' },
  ]);
});
