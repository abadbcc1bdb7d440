/**
 * The single executable for tests: built by `npm test` (scripts/build-bin.mjs --if-stale), or
 * here when a test file runs alone and it is missing or older than src/. Tests run a copy
 * alone in a fresh directory, so nothing next to it can be read at run time.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const BUILT_BINARY = resolve(`dist/bin/berth-linux-${process.arch}`);

export interface BinaryCopy {
  /** The directory holding the copy and nothing else. */
  home: string;
  /** A directory for the test's own files (run directories, tool directories). */
  scratch: string;
  /** The copy, named berth. */
  bin: string;
  /** A fresh directory of symlinks to just these /usr/bin tools: a PATH without node. */
  toolPath(tools: string[]): string;
  remove(): void;
}

/** `arch`: the binary for another CPU (scripts/build-bin.mjs --arch), run here under qemu-user. */
export function binaryCopy(arch: string = process.arch): BinaryCopy {
  const b = spawnSync(process.execPath, ['scripts/build-bin.mjs', '--arch', arch, '--if-stale'], { encoding: 'utf8', timeout: 300_000 });
  assert.equal(b.status, 0, `scripts/build-bin.mjs --arch ${arch} failed:\n${b.stdout}${b.stderr}`);
  const home = mkdtempSync(join(tmpdir(), 'berth-bin-'));
  const scratch = mkdtempSync(join(tmpdir(), 'berth-bin-scratch-'));
  const bin = join(home, 'berth');
  copyFileSync(resolve(`dist/bin/berth-linux-${arch}`), bin);
  chmodSync(bin, 0o755);
  let n = 0;
  return {
    home,
    scratch,
    bin,
    toolPath(tools) {
      const dir = join(scratch, `tools-${n++}`);
      mkdirSync(dir);
      for (const t of tools) symlinkSync(`/usr/bin/${t}`, join(dir, t));
      return dir;
    },
    remove: () => {
      for (const d of [home, scratch]) rmSync(d, { recursive: true, force: true });
    },
  };
}
