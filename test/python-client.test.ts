/**
 * The Python client (clients/python, issue 14) with the real interpreter against the real
 * CLI: its unittest suite inside a network namespace (a port lease round trip, a stack whose
 * engine fails, a torch.distributed-style launcher, Ctrl-C cleanup, berth run), then the
 * two ways to get it: `pip install ./clients/python` (offline) and one copied file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { requireNetns, runCollect, runInNetns } from './helpers/netns.js';
import { NEED, requireNeeds } from './helpers/require.js';

const ROOT = resolve(import.meta.dirname, '..');
const CLIENT = join(ROOT, 'clients/python');
/** Debian's interpreter, never a pyenv shim (house rule). */
const PY = '/usr/bin/python3';
/** A command line the client splits as a shell would (shlex): quoted, for a clone path with spaces. */
const BERTH = [process.execPath, join(ROOT, 'dist/berth.cjs')].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');

function box(t: { after(fn: () => void): void }): { dir: string; env: NodeJS.ProcessEnv } {
  const dir = mkdtempSync(join(tmpdir(), 'berth-py-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return { dir, env: { ...process.env, BERTH, BERTH_STATE_DIR: join(dir, 'state'), PYTHONDONTWRITEBYTECODE: '1', NO_COLOR: '1' } };
}

test('python client: unittest suite against the CLI', async (t) => {
  if (!requireNeeds(t, NEED.python3)) return;
  if (!requireNetns(t)) return;
  const { env } = box(t);
  const r = await runInNetns({}, ['sh', '-c', `cd "$CLIENT" && exec ${PY} -m unittest -v tests.test_client`], { env: { ...env, PYTHONPATH: CLIENT, CLIENT }, timeoutMs: 180_000 });
  for (const line of r.stderr.split('\n')) if (/ \.\.\. |^Ran |^OK|^FAILED/.test(line)) t.diagnostic(line);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stderr, /^Ran (\d+) tests/m);
  assert.doesNotMatch(r.stderr, /skipped/);
  for (const name of [
    'test_round_trip', 'test_failing_engine', 'test_torch_distributed_style_launcher', 'test_keyboard_interrupt_stops_the_stack', 'test_failure_before_ready',
    // issues 21 and 22: a missing berth, bad arguments, unencodable output, the timeout's tail, re-runnable up()
    'test_names_every_place_and_how_to_install', 'test_bundled_executable_first_after_explicit_ones', 'test_empty_command', 'test_bad_executables', 'test_durations',
    'test_output_a_stream_cannot_encode_is_kept', 'test_ready_timeout_tail_is_the_services_stderr', 'test_up_runs_makes_a_fresh_directory_per_call',
    // issue 32 item 16
    'test_nul_in_a_name_is_a_usage_error', 'test_ready_endpoints_and_ordered_stop', 'test_up_from_a_thread_outlives_the_thread',
    'test_keyboard_interrupt_in_a_threads_wait', 'test_a_service_printing_berths_json_fools_nothing', 'test_stdin_eof_stop_says_the_parent_went_away',
    'test_events_fd_is_berths_own_channel',
    // issue 28: learned ports
    'test_learned_port', 'test_stack_learned_ports',
    // issue 29: generations through on_status
    'test_generations_reported_through_on_status',
  ]) {
    assert.match(r.stderr, new RegExp(`${name} .* \\.\\.\\. ok`), `${name} ran and passed`);
  }
});

test('python client: pip install ./clients/python (offline) and the single-file copy', async (t) => {
  if (!requireNeeds(t, NEED.python3, NEED.pip, NEED.setuptools)) return;
  const { dir, env } = box(t);
  const site = join(dir, 'site');
  // From a copy: setuptools writes build/ and *.egg-info next to the sources.
  const src = join(dir, 'src');
  cpSync(CLIENT, src, { recursive: true, filter: (p) => !p.includes('/tests') });
  const pip = await runCollect([PY, '-m', 'pip', 'install', '--quiet', '--no-index', '--no-build-isolation', '--no-deps', '--target', site, src], { env, timeoutMs: 120_000 });
  assert.equal(pip.code, 0, pip.stdout + pip.stderr);
  assert.ok(existsSync(join(site, 'berth/py.typed')), 'PEP 561 marker installed');
  const single = join(dir, 'single');
  mkdirSync(single);
  copyFileSync(join(CLIENT, 'berth/__init__.py'), join(single, 'berth.py'));
  const script = 'import berth, sys\nwith berth.port(range="20000-20999", ttl=60) as lease:\n    print(berth.__file__, lease.port)\n';
  for (const path of [site, single]) {
    const r = await runCollect([PY, '-c', script], { env: { ...env, PYTHONPATH: path }, timeoutMs: 30_000 });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, new RegExp(`^${path}/berth(/__init__)?\\.py \\d+\\n$`));
  }
});
