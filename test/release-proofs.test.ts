/**
 * Issue 32 item 1: `berth release` acts only on what the kernel proves, never on what a
 * record claims. Three real users in a network namespace made for the test: root, a victim
 * with leases (one made inside a user namespace, where she is "root"), and a forger who
 * binds records claiming uid=0, job=777 and root's shell as owner over the victim's ports,
 * duplicates a part of each victim record, and forges a /proc/net/unix line pointing port
 * 25000 at a victim socket. Root's release --job/--all/--owner/--port must leave the victim's
 * leases alone, yet still end what it names and its own; the victim ends hers with --all.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { BERTH } from './helpers/cli.js';
import { requireNetns, runInNetns, tsNode } from './helpers/netns.js';
import { throwawayUser } from './helpers/users.js';

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

test('release by job, owner, --all or a forged line ends only what the kernel shows is targeted', async (t) => {
  if (process.getuid?.() !== 0) {
    if (process.env.CI) throw new Error('the release-proofs test must run as root in CI');
    process.stderr.write(`\n!!! SKIPPING "${t.name}": needs root. In CI this is a failure.\n\n`);
    t.skip('needs root');
    return;
  }
  if (!requireNetns(t)) return;
  const victim = throwawayUser('berthvictim');
  const forger = throwawayUser('berthforger');
  const script = join(import.meta.dirname, 'fixtures', 'scripts', 'release-proofs.ts');
  const bind = join(import.meta.dirname, 'fixtures', 'scripts', 'bind-names.py');
  const r = await runInNetns({}, tsNode(script, `${victim.uid}:${victim.gid}`, `${forger.uid}:${forger.gid}`, BERTH, bind), { timeoutMs: 180_000 });
  assert.equal(r.code, 0, `driver failed: ${r.stderr}`);
  const o = JSON.parse(r.stdout) as Record<string, Ran> & { aliveAfterRoot: number[]; aliveAtEnd: number[] };
  for (const k of ['vJob', 'vAll', 'vOwner', 'vLine', 'vUserns', 'rootOwn', 'vInJob', 'vPlain']) assert.equal(o[k]!.code, 0, `${k}: ${o[k]!.stderr}`);
  const leases = JSON.parse(o.rootLeasesForged!.stdout) as { port: number; uid?: number; name?: string }[];
  assert.equal(leases.find((l) => l.port === 20000)?.name, 'forged', 'the forgery did take the label (the attack is real)');

  for (const k of ['rootReleaseJob', 'rootReleaseAll', 'rootReleaseOwner', 'rootReleaseLine']) assert.equal(o[k]!.code, 0, `${k}: ${o[k]!.stderr}`);
  assert.doesNotMatch(o.rootReleaseJob!.stdout, /released/, `release --job 777 follows a forged job=: ${o.rootReleaseJob!.stdout}`);
  assert.match(o.rootReleaseAll!.stdout, /^released 20010$/m, 'root --all ends root’s own lease only');
  assert.doesNotMatch(o.rootReleaseOwner!.stdout, /released/, `release --owner follows a forged owner=: ${o.rootReleaseOwner!.stdout}`);
  assert.doesNotMatch(o.rootReleaseLine!.stdout, /released/, 'a forged line of /proc/net/unix redirects nothing');
  assert.match(o.rootReleaseLine!.stderr, /port 25000: its name is not listed as berth binds it/);
  assert.deepEqual(o.aliveAfterRoot, [20000, 20001, 20002, 20003, 20004, 20011, 20012], 'every victim lease survives root’s forged-label releases');

  assert.match(o.rootReleasePlain!.stdout, /^released 20012$/m, 'root still ends a lease it names');
  assert.match(o.rootReleaseJob778!.stdout, /^released 20011$/m, 'release --job ends a holder started in that job');
  // The victim's own leases are hers, by the uid of their holders, whatever the records claim (a duplicated part, uid=0).
  assert.match(o.victimReleaseAll!.stdout, /^released 20000 20001 20002 20003 20004$/m, `${o.victimReleaseAll!.stdout}${o.victimReleaseAll!.stderr}`);
  assert.deepEqual(o.aliveAtEnd, []);
});
