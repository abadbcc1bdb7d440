/**
 * The recipes of servers that keep data, run for real with Debian's packages (installed by
 * .ci/run): PostgreSQL 15 as the postgres user with its data in its replica directory made
 * by initdb as a one-shot step, and a Redis Cluster formed by a one-shot `--cluster create`.
 * `berth up` of each recipe in a fresh network namespace; its job checks an answer. Outside
 * CI a missing program skips the test with one line naming the package; in CI it fails.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { berth } from './helpers/cli.js';
import { requireNetns } from './helpers/netns.js';

const RECIPES = resolve('examples/recipes');
const TIMEOUT = 240_000;
const PG = '/usr/lib/postgresql/15/bin';

/** False (skipped loudly outside CI, failed in CI) when `file` is missing. */
function need(t: TestContext, file: string, pkg: string): boolean {
  if (existsSync(file)) return true;
  if (process.env.CI === 'true') assert.fail(`${file} is missing: .ci/run installs ${pkg}`);
  process.stderr.write(`\n!!! SKIPPING "${t.name}": ${file} is missing (Debian: apt-get install ${pkg}). In CI this is a failure.\n\n`);
  t.skip(`SKIP: ${file} is missing; install Debian's ${pkg} to run this recipe`);
  return false;
}

interface Record {
  service: string;
  replica: number;
  port: number | null;
  url: string | null;
  scheme?: string | null;
  state: string;
}

async function up(t: TestContext, name: string, opts: { traversable?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'berth-recipe-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // The postgres user must pass through every folder above the run directory (dir_owner).
  if (opts.traversable) chmodSync(dir, 0o711);
  const run = join(dir, 'run');
  const r = await berth(['up', join(RECIPES, name, 'stack.yaml'), '--run-dir', run], { netns: {}, env: { BERTH_STATE_DIR: join(dir, 'state') }, timeoutMs: TIMEOUT });
  const doc = existsSync(join(run, 'endpoints.json')) ? (JSON.parse(readFileSync(join(run, 'endpoints.json'), 'utf8')) as { replicas: Record[] }) : { replicas: [] };
  return { r, run, records: (s: string) => doc.replicas.filter((x) => x.service === s).sort((a, b) => a.replica - b.replica), log: (f: string) => readFileSync(join(run, 'logs', f), 'utf8') };
}

describe('recipes of servers with data (examples/recipes), run with Debian\'s packages', { concurrency: 2, timeout: 2 * TIMEOUT }, () => {
  test('postgresql: initdb as a one-shot step into db\'s replica directory, postgres as the postgres user, pg_isready, postgresql:// URLs', async (t) => {
    if (!requireNetns(t) || !need(t, `${PG}/postgres`, 'postgresql-15') || !need(t, '/usr/bin/psql', 'postgresql-client-15')) return;
    if (process.getuid?.() !== 0) {
      if (process.env.CI === 'true') assert.fail('the postgresql recipe runs as root in CI (setpriv to postgres)');
      t.skip('SKIP: the postgresql recipe as written needs root (setpriv to the postgres user)');
      return;
    }
    const u = await up(t, 'postgresql', { traversable: true });
    assert.equal(u.r.code, 0, u.r.stderr);
    assert.equal(u.r.stdout, 'berth\n');
    const [db] = u.records('db');
    assert.match(db!.url ?? '', /^postgresql:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(db!.scheme, 'postgresql');
    assert.match(u.r.stderr, new RegExp(`^ {2}db/0 +${db!.url!.replace(/[.]/g, '\\.')} +pid \\d+$`, 'm'), 'the ready line in the scheme');
    for (const step of ['initdb', 'schema']) {
      const [rec] = u.records(step);
      assert.deepEqual([rec!.port, rec!.state], [null, 'exited'], `${step}: a one-shot step, no port, completed`);
    }
    // The cluster is in db's own directory, given to postgres, private.
    const data = join(u.run, 'data', 'db-0');
    const st = statSync(data);
    assert.deepEqual([st.mode & 0o777, st.uid], [0o700, Number(readFileSync('/etc/passwd', 'utf8').match(/^postgres:[^:]*:(\d+):/m)?.[1])]);
    assert.ok(existsSync(join(data, 'data', 'PG_VERSION')), 'initdb wrote the cluster there');
    assert.match(u.log('db-0.err'), new RegExp(`listening on IPv4 address "127\\.0\\.0\\.1", port ${db!.port}`));
  });

  test('redis-cluster: three nodes with their node files in their directories, --cluster create as a one-shot step, the job through the cluster', async (t) => {
    if (!requireNetns(t) || !need(t, '/usr/bin/redis-server', 'redis-server') || !need(t, '/usr/bin/redis-cli', 'redis-tools')) return;
    const u = await up(t, 'redis-cluster');
    assert.equal(u.r.code, 0, u.r.stderr);
    assert.equal(u.r.stdout, 'berth\n');
    const nodes = u.records('node');
    assert.equal(nodes.length, 3);
    for (const n of nodes) {
      assert.match(n.url ?? '', /^redis:\/\/127\.0\.0\.1:\d+$/);
      const conf = readFileSync(join(u.run, 'data', `node-${n.replica}`, 'nodes.conf'), 'utf8');
      // Its own line ("myself") names its client port and the bus port berth leased.
      assert.match(conf, new RegExp(`127\\.0\\.0\\.1:${n.port}@\\d+\\S* myself,master`), conf);
    }
    const [create] = u.records('create');
    assert.deepEqual([create!.port, create!.state], [null, 'exited']);
    assert.match(u.log('create-0.out'), /\[OK\] All 16384 slots covered/);
    // {...node.hostports}: redis-cli got one HOST:PORT argument per node (no sh to split them).
    for (const n of nodes) assert.match(u.log('create-0.out'), new RegExp(`^M: [0-9a-f]+ 127\\.0\\.0\\.1:${n.port}$`, 'm'));
    assert.doesNotMatch(u.r.stderr, /warning: .*listen/i, 'no listener outside the leased ports (the bus is declared)');
  });
});
