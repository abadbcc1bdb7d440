#!/usr/bin/env node
// The demo's job: sends a batch of requests through the proxy and prints a short summary
// (requests, per-engine counts, latency). Exits 0 when every request succeeded, 1 otherwise.
// Only node: built-ins.
//
//   node client.js --url http://127.0.0.1:21000 [--requests 200] [--concurrency 8]
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    requests: { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '8' },
  },
});

const total = Number(values.requests);
const concurrency = Math.max(1, Math.min(Number(values.concurrency), total));
let base;
try {
  base = new URL('/generate', values.url);
} catch {
  console.error(`client: --url ${values.url ?? '(missing)'}: expected http://HOST:PORT`);
  process.exit(64);
}
if (!Number.isInteger(total) || total < 1) {
  console.error('client: --requests must be a whole number ≥ 1');
  process.exit(64);
}

const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
const latencies = [];
const perEngine = new Map();
const errors = [];

function once(i) {
  const body = JSON.stringify({ prompt: `request ${i}: the quick brown fox` });
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = http.request(base, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        latencies.push(performance.now() - t0);
        try {
          const r = JSON.parse(text);
          if (res.statusCode !== 200) errors.push(`HTTP ${res.statusCode}: ${r.error ?? text.trim()}`);
          else perEngine.set(r.engine, (perEngine.get(r.engine) ?? 0) + 1);
        } catch {
          errors.push(`HTTP ${res.statusCode}: ${text.trim().slice(0, 200)}`);
        }
        resolve();
      });
    });
    req.on('error', (err) => {
      errors.push(err.message);
      resolve();
    });
    req.end(body);
  });
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
const ms = (x) => `${x.toFixed(1)} ms`;

const start = performance.now();
let issued = 0;
await Promise.all(Array.from({ length: concurrency }, async () => {
  while (issued < total) await once(issued++);
}));
const elapsed = (performance.now() - start) / 1000;
agent.destroy();

const sorted = [...latencies].sort((a, b) => a - b);
console.log(`client: ${total} requests to ${values.url} in ${elapsed.toFixed(2)} s (${concurrency} concurrent, ${Math.round(total / elapsed)} req/s)`);
for (const [engine, n] of [...perEngine].sort()) console.log(`  ${engine.padEnd(10)} ${String(n).padStart(5)} requests`);
if (sorted.length > 0) console.log(`  latency    p50 ${ms(pct(sorted, 50))}  p95 ${ms(pct(sorted, 95))}  max ${ms(sorted[sorted.length - 1])}`);
console.log(`  errors     ${errors.length}${errors.length ? `  (first: ${errors[0]})` : ''}`);
process.exitCode = errors.length === 0 ? 0 : 1;
