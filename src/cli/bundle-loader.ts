import { readFileSync } from 'node:fs';
import { createRequire, wrap } from 'node:module';
import { dirname, join } from 'node:path';
import { Script } from 'node:vm';

/*
 * How dist/berth.cjs loads a command's bundle, dist/cli/<name>.cjs (scripts/build.mjs): as
 * require() would, but compiled with the V8 code cache scripts/build.mjs stored beside it
 * (<name>.cjs.cache: the bytecode of the bundle's top level and of what its loading ran), so
 * `berth port` does not compile its 150 KB at every start (0.976× of the CPU of a
 * plain require(), 31 pairs: docs/scale.md §2). A cache V8 does not accept (another Node.js, other V8 flags, a
 * bundle changed since) is ignored by V8 itself, which then compiles the source as usual; no
 * cache file at all is a plain require(). Only ever used from dist/berth.cjs (a CommonJS bundle).
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
