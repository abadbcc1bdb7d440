// The official Node.js build for another architecture, for scripts/build-bin.mjs: fetched by
// npm (the registry carries each official build as a package, node-linux-<arch>), checked
// against the sha512 pinned in build-bin.mjs, and kept in node_modules/.cache/berth-node.
//
// Not a devDependency: npm refuses to install a package for another CPU (EBADPLATFORM, so
// `npm ci` would fail), and its `node` bin would shadow the real node in every npm script.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** Path of the pinned node binary, fetched on first use; throws with what went wrong. */
export function pinnedNode({ name, version, integrity }, cacheRoot = 'node_modules/.cache/berth-node') {
  const dir = join(cacheRoot, `${name}-${version}`);
  const bin = join(dir, 'node');
  if (existsSync(bin)) return bin;
  const work = `${dir}.tmp-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const pack = spawnSync('npm', ['pack', `${name}@${version}`, '--pack-destination', work, '--json', '--silent'], { encoding: 'utf8' });
    if (pack.status !== 0) throw new Error(`npm pack ${name}@${version} failed (exit ${pack.status}):\n${pack.stderr}`);
    const tgz = join(work, JSON.parse(pack.stdout)[0].filename);
    const [algo, want] = integrity.split('-');
    const got = createHash(algo).update(readFileSync(tgz)).digest('base64');
    if (got !== want) throw new Error(`${name}@${version}: the package's ${algo} is ${got}, the pin says ${want}`);
    const tar = spawnSync('tar', ['-xzf', tgz, '-C', work, 'package/bin/node'], { encoding: 'utf8' });
    if (tar.status !== 0) throw new Error(`cannot unpack ${tgz}: ${tar.stderr}`);
    chmodSync(join(work, 'package/bin/node'), 0o755);
    try {
      renameSync(join(work, 'package/bin'), dir);
    } catch (e) {
      // Another build fetched it at the same time: theirs is as good.
      if (!existsSync(bin)) throw e;
    }
    return bin;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
