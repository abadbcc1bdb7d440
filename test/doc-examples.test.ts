/**
 * Examples that cannot rot (issue 14): every code block of README.md and docs/*.md marked
 * `runnable` (docs/examples.md) runs here from the packed package, not from the source tree:
 * `npm pack`, install the tarball into a fresh project (offline: its dependencies (yaml, mustache)
 * are packed from node_modules too), `tsc --strict` the TypeScript blocks against the
 * shipped .d.ts, run every block in a fresh network namespace, and compare its output with
 * the `output` block that follows it, if any.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { requireNetns, runCollect, runInNetns } from './helpers/netns.js';

const ROOT = resolve(import.meta.dirname, '..');
const PY = '/usr/bin/python3';
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export interface DocBlock {
  /** "README.md:123" (the line of the opening fence). */
  where: string;
  doc: string;
  lang: 'ts' | 'python' | 'sh' | 'yaml';
  code: string;
  /** yaml blocks: the file they are written to, in the doc's working directory. */
  file?: string;
  /** The `output` block right after it. */
  output?: string;
}

const LANGS: Record<string, DocBlock['lang']> = { ts: 'ts', typescript: 'ts', python: 'python', py: 'python', sh: 'sh', bash: 'sh', yaml: 'yaml' };

/** The runnable blocks of one markdown text (docs/examples.md says how they are marked). */
export function runnableBlocks(doc: string, text: string): DocBlock[] {
  const lines = text.split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w+)\s+runnable\b(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const lang = LANGS[open[1]!];
    if (!lang) throw new Error(`${doc}:${i + 1}: runnable block in unknown language ${open[1]}`);
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    const block: DocBlock = { where: `${doc}:${start + 1}`, doc, lang, code: body.join('\n') + '\n' };
    const file = /\bfile=(\S+)/.exec(open[2]!)?.[1];
    if (file) block.file = file;
    if (lang === 'yaml' && !file) throw new Error(`${block.where}: a runnable yaml block needs file=NAME`);
    // An `output` block after at most a line of prose.
    let j = i + 1;
    while (j < lines.length && lines[j]!.trim() === '' && j < i + 3) j++;
    if (lines[j] !== undefined && /^```output\s*$/.test(lines[j]!)) {
      const out: string[] = [];
      for (j++; j < lines.length && !/^```\s*$/.test(lines[j]!); j++) out.push(lines[j]!);
      block.output = out.join('\n');
      i = j;
    }
    blocks.push(block);
  }
  return blocks;
}

/** Output lines must match one for one; `…` in an expected line stands for any text. */
export function outputMatches(expected: string, actual: string): boolean {
  const want = expected.trimEnd().split('\n');
  const got = actual.trimEnd().split('\n');
  if (want.length !== got.length) return false;
  return want.every((w, k) => new RegExp('^' + w.split('…').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*') + '$').test(got[k]!));
}

test('doc blocks: markers, files and output blocks are read as docs/examples.md says', () => {
  const md = ['text', '```ts runnable', 'console.log(1);', '```', '', '```output', '1', '```', '```yaml runnable file=s.yaml', 'a: 1', '```', '```sh', 'not runnable', '```'].join('\n');
  const b = runnableBlocks('x.md', md);
  assert.deepEqual(b, [
    { where: 'x.md:2', doc: 'x.md', lang: 'ts', code: 'console.log(1);\n', output: '1' },
    { where: 'x.md:9', doc: 'x.md', lang: 'yaml', code: 'a: 1\n', file: 's.yaml' },
  ]);
  assert.ok(outputMatches('port …\nok', 'port 20001\nok\n'));
  assert.ok(!outputMatches('port …\nok', 'port 20001\n'));
  assert.throws(() => runnableBlocks('y.md', '```yaml runnable\na: 1\n```'), /needs file=NAME/);
});

function docs(): string[] {
  return ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
}

async function ok(argv: string[], what: string, opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<string> {
  const r = await runCollect(argv, { timeoutMs: 300_000, ...opts });
  assert.equal(r.code, 0, `${what} failed (exit ${r.code}):\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

test('runnable examples of README.md and docs/*.md, from the packed package', async (t) => {
  if (!requireNetns(t)) return;
  const blocks = docs().flatMap((d) => runnableBlocks(d, readFileSync(join(ROOT, d), 'utf8')));
  assert.ok(blocks.some((b) => b.doc === 'README.md' && b.lang === 'ts'), 'the README library example is marked runnable');
  assert.ok(blocks.some((b) => b.doc === 'README.md' && b.lang === 'python'), 'the README Python example is marked runnable');

  const dir = mkdtempSync(join(tmpdir(), 'berth-docs-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const npmEnv = { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };
  // dist/ is built by `npm test`; pack it as it is (no prepare script) with its dependencies from node_modules.
  await ok(['npm', 'pack', '--ignore-scripts', '--silent', '--pack-destination', dir], 'npm pack', { env: npmEnv });
  for (const dep of ['yaml', 'mustache']) await ok(['npm', 'pack', '--silent', join(ROOT, 'node_modules', dep), '--pack-destination', dir], `npm pack ${dep}`, { env: npmEnv });
  const tarballs = readdirSync(dir).filter((f) => f.endsWith('.tgz'));
  const proj = join(dir, 'proj');
  mkdirSync(proj);
  writeFileSync(join(proj, 'package.json'), JSON.stringify({ name: 'doc-examples', private: true, type: 'module' }));
  await ok(['npm', 'install', '--offline', '--ignore-scripts', '--no-package-lock', '--prefix', proj, ...tarballs.map((f) => join(dir, f))], 'npm install of the tarball', { env: npmEnv });

  // TypeScript: every block type-checked strictly against the installed .d.ts, then emitted.
  const ts = blocks.filter((b) => b.lang === 'ts');
  const name = (b: DocBlock) => b.where.replace(/[^A-Za-z0-9]+/g, '-');
  mkdirSync(join(proj, 'src'));
  for (const b of ts) writeFileSync(join(proj, 'src', `${name(b)}.ts`), b.code);
  writeFileSync(
    join(proj, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, outDir: 'out', rootDir: 'src', types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')], skipLibCheck: false },
      include: ['src'],
    }),
  );
  if (ts.length > 0) {
    const r = await runCollect([process.execPath, join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', proj], { timeoutMs: 300_000 });
    assert.equal(r.code, 0, `tsc --strict of the TypeScript examples against the packed .d.ts:\n${r.stdout}${r.stderr}`);
  }

  const bin = join(proj, 'node_modules/.bin');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // The packed berth first; Debian's python3, never a pyenv shim.
    PATH: [bin, dirname(process.execPath), '/usr/bin', '/bin'].join(':'),
    BERTH: join(bin, 'berth'),
    PYTHONPATH: join(ROOT, 'clients/python'),
    PYTHONDONTWRITEBYTECODE: '1',
    NO_COLOR: '1',
  };
  for (const doc of [...new Set(blocks.map((b) => b.doc))]) {
    const work = join(dir, 'work', doc.replace(/\W+/g, '-'));
    mkdirSync(work, { recursive: true });
    const docEnv = { ...env, BERTH_STATE_DIR: join(work, '.state') };
    for (const b of blocks.filter((x) => x.doc === doc)) {
      await t.test(`${b.where} (${b.lang})`, async () => {
        if (b.lang === 'yaml') return void writeFileSync(join(work, b.file!), b.code);
        let argv: string[];
        if (b.lang === 'ts') argv = [process.execPath, join(proj, 'out', `${name(b)}.js`)];
        else if (b.lang === 'python') {
          writeFileSync(join(work, `${name(b)}.py`), b.code);
          argv = [PY, join(work, `${name(b)}.py`)];
        } else argv = ['bash', '-euo', 'pipefail', '-c', b.code];
        const r = await runInNetns({}, ['sh', '-c', `cd ${q(work)} && exec "$@"`, 'sh', ...argv], { env: docEnv, timeoutMs: 120_000 });
        assert.equal(r.code, 0, `${b.where} exited ${r.code}:\n${r.stdout}${r.stderr}`);
        if (b.output !== undefined) assert.ok(outputMatches(b.output, r.stdout), `${b.where}: output differs from the output block:\n--- expected\n${b.output}\n--- got\n${r.stdout}`);
      });
    }
  }
  t.diagnostic(`${blocks.length} runnable blocks: ${blocks.map((b) => b.where).join(', ')}`);
});
