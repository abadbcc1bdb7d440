import { readFileSync } from 'node:fs';
import { createRequire, wrap } from 'node:module';
import { dirname, join } from 'node:path';
import { Script } from 'node:vm';

/*
 * How dist/berth.cjs loads dist/cli/<name>.cjs: as require() would, but with the V8 code cache
 * scripts/build.mjs stored beside it (<name>.cjs.cache), so `berth port` does not compile its
 * 150 KB at every start (0.976× the CPU, docs/scale.md §2). V8 ignores a cache it does not accept
 * (another Node.js, a changed bundle); without one it is a plain require().
 */

/** The module.exports of dist/cli/<name>.cjs. */
export function loadBundle(name: string): unknown {
  const file = join(__dirname, 'cli', `${name}.cjs`);
  const req = createRequire(file);
  let cachedData: Buffer | undefined;
  try {
    cachedData = readFileSync(`${file}.cache`);
  } catch {
    return req(file);
  }
  const mod = { exports: {} as unknown, filename: file, id: file, loaded: false };
  const fn = new Script(wrap(readFileSync(file, 'utf8')), { filename: file, cachedData }).runInThisContext() as (...a: unknown[]) => void;
  fn.call(mod.exports, mod.exports, req, mod, file, dirname(file));
  mod.loaded = true;
  return mod.exports;
}
