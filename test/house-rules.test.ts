/**
 * The house's own rules, held by a test so a change cannot quietly break them: no source
 * file over 350 lines, no line of src/ over 160 characters, and every folder of src/ opens
 * its index.ts with a comment saying what it owns and what it may import.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { test } from 'node:test';

const SRC = resolve(import.meta.dirname, '..', 'src');
const MAX_FILE_LINES = 350;
const MAX_LINE_CHARS = 160;

function walk(dir: string): { files: string[]; dirs: string[] } {
  const files: string[] = [];
  const dirs: string[] = [dir];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      const sub = walk(p);
      files.push(...sub.files);
      dirs.push(...sub.dirs);
    } else if (name.endsWith('.ts')) files.push(p);
  }
  return { files, dirs };
}

const { files, dirs } = walk(SRC);

test(`no source file over ${MAX_FILE_LINES} lines, no line over ${MAX_LINE_CHARS} characters`, () => {
  assert.ok(files.length > 100, `only ${files.length} files under src/`);
  const problems: string[] = [];
  for (const f of files) {
    const lines = readFileSync(f, 'utf8').split('\n');
    if (lines.at(-1) === '') lines.pop();
    if (lines.length > MAX_FILE_LINES) problems.push(`${relative(SRC, f)}: ${lines.length} lines`);
    lines.forEach((l, i) => {
      if ([...l].length > MAX_LINE_CHARS) problems.push(`${relative(SRC, f)}:${i + 1}: ${[...l].length} characters`);
    });
  }
  assert.deepEqual(problems, []);
});

test('every folder of src/ has an index.ts that opens with what it owns and may import', () => {
  const problems: string[] = [];
  for (const d of dirs.slice(1)) {
    let text: string;
    try {
      text = readFileSync(join(d, 'index.ts'), 'utf8');
    } catch {
      problems.push(`${relative(SRC, d)}/: no index.ts`);
      continue;
    }
    const opening = /^\s*\/\*[\s\S]*?\*\//.exec(text)?.[0] ?? '';
    if (!/may import/i.test(opening)) problems.push(`${relative(SRC, d)}/index.ts: no opening comment naming what it owns and may import`);
  }
  assert.deepEqual(problems, []);
});
