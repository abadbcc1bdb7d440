#!/usr/bin/env node
// A stand-in inference engine for the berth demo: it listens at once (like vLLM or TGI,
// whose HTTP server comes up before the weights are in memory), answers /health with 503
// while it "loads a model", then 200. POST /generate returns a fake completion after a
// short simulated compute time. Only node: built-ins.
//
//   node engine.js --port 20000 --replica 0 [--host 127.0.0.1] [--load-ms 500]
//                  [--latency-ms 8] [--fail]
// Env: MODEL (name shown), LOAD_MS, FAIL_REPLICA=1 (or "0,2"): these replicas fail to load
// (exit 3). With systemd socket activation (LISTEN_FDS=1, berth's --handoff fd) it serves
// the inherited fd 3 instead of binding.
import http from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    replica: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    'load-ms': { type: 'string' },
    'latency-ms': { type: 'string', default: '8' },
    fail: { type: 'boolean', default: false },
  },
});

const replica = Number(values.replica);
const name = `engine/${replica}`;
const model = process.env.MODEL || 'tiny-demo';
const inherited = process.env.LISTEN_FDS === '1' && process.env.LISTEN_PID === String(process.pid);
const port = values.port === undefined ? undefined : Number(values.port);
if (!inherited && (port === undefined || !Number.isInteger(port) || port < 1 || port > 65535)) {
  console.error(`[${name}] usage: node engine.js --port PORT --replica N (got --port ${values.port})`);
  process.exit(64);
}
const loadMs = Number(values['load-ms'] ?? process.env.LOAD_MS ?? Math.min(800, 300 + 200 * replica));
const latencyMs = Number(values['latency-ms']);
const failing = values.fail || (process.env.FAIL_REPLICA ?? '').split(',').map((s) => s.trim()).includes(String(replica));

let loaded = false;
let served = 0;
const json = (res, status, body) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body) + '\n');
};

const server = http.createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  if (path === '/health') {
    if (loaded) json(res, 200, { status: 'ok', engine: name, model });
    else json(res, 503, { status: 'loading', engine: name, model });
    return;
  }
  if (path === '/generate') {
    if (!loaded) return json(res, 503, { error: 'model is still loading', engine: name });
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      let prompt = '';
      try {
        prompt = String(JSON.parse(body || '{}').prompt ?? '');
      } catch {
        return json(res, 400, { error: 'body must be JSON like {"prompt": "..."}', engine: name });
      }
      // Simulated compute: latency ± 50 %.
      setTimeout(() => {
        served++;
        const tokens = 8 + (prompt.length % 8);
        json(res, 200, { engine: name, replica, model, completion: `${prompt} … (${tokens} tokens from ${name})`, tokens });
      }, latencyMs * (0.5 + Math.random()));
    });
    return;
  }
  json(res, 404, { error: `no route ${req.method} ${path}; try GET /health or POST /generate`, engine: name });
});

server.on('error', (err) => {
  console.error(`[${name}] cannot listen: ${err.message}`);
  process.exit(69);
});
server.listen(inherited ? { fd: 3 } : { port, host: values.host }, () => {
  const a = server.address();
  const where = typeof a === 'object' && a ? `${a.address}:${a.port}` : 'fd 3';
  console.log(`[${name}] listening on ${where} (pid ${process.pid}${inherited ? ', inherited socket' : ''}); /health is 503 until the model is loaded`);
  console.log(`[${name}] loading model "${model}" …`);
  const started = Date.now();
  if (failing) {
    setTimeout(() => {
      console.error(`[${name}] loading model "${model}": shard 1/4 ok, shard 2/4 …`);
      console.error(`[${name}] error: failed to load model "${model}": weights file models/${model}/model-00002-of-00004.safetensors is truncated (expected 268435456 bytes, read 91750400)`);
      console.error(`[${name}] (simulated failure: FAIL_REPLICA=${process.env.FAIL_REPLICA ?? ''}${values.fail ? ' --fail' : ''})`);
      process.exit(3);
    }, loadMs / 2);
    return;
  }
  setTimeout(() => {
    loaded = true;
    console.log(`[${name}] model "${model}" loaded in ${Date.now() - started} ms; serving`);
  }, loadMs);
});

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    console.log(`[${name}] ${sig}: shutting down after ${served} requests`);
    server.close();
    server.closeAllConnections?.();
    process.exit(0);
  });
}
