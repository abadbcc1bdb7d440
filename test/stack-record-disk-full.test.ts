/**
 * A run directory that fills up mid-run (issue 22 item 2): a write that fails (here ENOSPC) is
 * said at once on stderr, once per file, with the path; it is recorded where it still can be
 * (endpoints.json's writeFailures, the final states written in place); and the exit status
 * becomes 74 unless the run failed otherwise. Each case runs on a real 200 KB tmpfs mounted
 * inside a mount namespace the test makes (`unshare --mount`, with --net for the ports):
 * never on the host's filesystems.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BERTH, tempStateDir } from './helpers/cli.js';
import { requireNetns, runCollect, type RunResult } from './helpers/netns.js';

const B = `"${process.execPath}" "${BERTH}"`;
/** Prints 300 KB on stdout, then a line on stderr, and exits with $1. */
const CHATTY = `head -c 300000 /dev/zero | tr '\\\\0' x; echo; echo done >&2; exit $0`;

/**
 * Runs `script` (sh) in a new mount and network namespace with a 200 KB tmpfs at $FULL;
 * $OUT is a host directory the script copies what it wants to keep into.
 */
async function onSmallTmpfs(script: string): Promise<RunResult & { out: string }> {
  const host = mkdtempSync(join(tmpdir(), 'berth-disk-full-'));
  const full = join(host, 'tmpfs');
  const out = join(host, 'out');
  const setup = `set -e; ip link set lo up; mkdir -p ${full} ${out}; mount -t tmpfs -o size=200k,mode=0755 tmpfs ${full}; set +e; FULL=${full}; OUT=${out}`;
  const r = await runCollect(['unshare', '--mount', '--net', '--', 'sh', '-c', `${setup}\n${script}`], { env: { ...process.env, NO_COLOR: '1', BERTH_STATE_DIR: tempStateDir() }, timeoutMs: 60_000 });
  return { ...r, out };
}

const said = (stderr: string, path: string) => stderr.split('\n').filter((l) => l.startsWith(`berth: cannot write ${path}: no space left on the device (ENOSPC)`)).length;

function upStack(dir: string, jobStatus: number): string {
  const file = join(dir, 'stack.yaml');
  writeFileSync(
    file,
    `services:
  web:
    command: [/usr/bin/python3, -m, http.server, --bind, 127.0.0.1, "{port}"]
  job:
    job: true
    depends_on: { web: ready }
    command: [/bin/sh, -c, "${CHATTY.replace(/"/g, '\\"')}", "${jobStatus}"]
`,
  );
  return file;
}

interface Doc {
  replicas: { service: string; state: string }[];
  writeFailures?: { path: string; error: string }[];
}

test('berth up: a job that fills the run directory: said once per file at once, endpoints.json final (not "ready") with writeFailures, exit 74', async (t: TestContext) => {
  if (!requireNetns(t)) return;
  const stack = upStack(mkdtempSync(join(tmpdir(), 'berth-disk-full-stack-')), 0);
  const r = await onSmallTmpfs(`${B} up ${stack} --run-dir $FULL/run > /dev/null; echo "exit $?" > $OUT/exit; cp -r $FULL/run $OUT/`);
  const all = `${r.stderr}\n${r.stdout}`;
  assert.equal(readFileSync(join(r.out, 'exit'), 'utf8').trim(), 'exit 74', all);
  const run = join(r.out.replace(/out$/, 'tmpfs'), 'run');
  assert.equal(said(r.stderr, `${run}/logs/job-0.out`), 1, all);
  // Said when it happened: before the job's end is reported.
  assert.ok(r.stderr.indexOf(`cannot write ${run}/logs/job-0.out`) < r.stderr.indexOf('job/0 exited'), all);
  const doc = JSON.parse(readFileSync(join(r.out, 'run', 'endpoints.json'), 'utf8')) as Doc;
  assert.deepEqual(doc.replicas.map((x) => `${x.service}:${x.state}`), ['web:exited', 'job:exited'], JSON.stringify(doc));
  assert.ok(doc.writeFailures?.some((f) => f.path === `${run}/logs/job-0.out` && f.error === 'no space left on the device (ENOSPC)'), JSON.stringify(doc));
  // Whole lines only: a write cut short by the full disk leaves no half line behind.
  for (const line of readFileSync(join(r.out, 'run', 'events.jsonl'), 'utf8').split('\n').filter(Boolean)) assert.doesNotThrow(() => JSON.parse(line), line);
  // No temporary file of a failed replace left behind.
  assert.deepEqual(readdirSync(join(r.out, 'run')).filter((n) => n.endsWith('.tmp')), []);
});

test('berth up: the job fails too (exit 3): its status stands, the full disk is still said', async (t: TestContext) => {
  if (!requireNetns(t)) return;
  const stack = upStack(mkdtempSync(join(tmpdir(), 'berth-disk-full-stack-')), 3);
  const r = await onSmallTmpfs(`${B} up ${stack} --run-dir $FULL/run > /dev/null; echo "exit $?" > $OUT/exit`);
  assert.equal(readFileSync(join(r.out, 'exit'), 'utf8').trim(), 'exit 3', r.stderr);
  assert.match(r.stderr, /berth: cannot write \S+\/run\/logs\/job-0\.out: no space left on the device \(ENOSPC\)/);
});

test('berth run --diag-dir on a full disk: its stdout.log and stderr.log said once each, at once; exit 74 where the service exited 0', async (t: TestContext) => {
  if (!requireNetns(t)) return;
  // The service listens (it must be ready), then prints 300 KB and exits 0.
  const svc = `/usr/bin/python3 -m http.server --bind 127.0.0.1 {port} >/dev/null 2>&1 & p=\\$!; while [ ! -s \\$READY ]; do sleep 0.05; done; ${CHATTY.replace(/exit \$0$/, 'kill \\$p; wait \\$p; exit 0')}`;
  const r = await onSmallTmpfs(`mkdir -m 700 $FULL/d; READY=$OUT/ready.json; export READY; ${B} run --diag-dir $FULL/d --ready-file $OUT/ready.json -- sh -c "${svc}" > /dev/null; echo "exit $?" > $OUT/exit`);
  assert.equal(readFileSync(join(r.out, 'exit'), 'utf8').trim(), 'exit 74', r.stderr);
  for (const f of ['stdout.log', 'stderr.log']) assert.equal(r.stderr.split('\n').filter((l) => new RegExp(`^berth: sh: cannot write \\S+/d/${f}: no space left on the device \\(ENOSPC\\)`).test(l)).length, 1, r.stderr);
  assert.ok(r.stderr.indexOf('cannot write') < r.stderr.indexOf('done'), r.stderr);
});

test('berth run --ready-file on a full disk: 74 naming the file, the service stopped', async (t: TestContext) => {
  if (!requireNetns(t)) return;
  const r = await onSmallTmpfs(`head -c 300000 /dev/zero > $FULL/filler 2>/dev/null; ${B} run --ready-file $FULL/ready.json -- /usr/bin/python3 -m http.server --bind 127.0.0.1 {port} > /dev/null; echo "exit $?" > $OUT/exit`);
  assert.equal(readFileSync(join(r.out, 'exit'), 'utf8').trim(), 'exit 74', r.stderr);
  assert.match(r.stderr, /ready, but cannot write the ready file \S+\/ready\.json/);
});
