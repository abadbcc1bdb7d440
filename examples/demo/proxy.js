#!/usr/bin/env node
// A round-robin HTTP proxy for the berth demo: every request goes to the next backend
// (a connection error moves on to the one after). GET /health is the proxy's own.
// Only node: built-ins.
//
//   node proxy.js --port 21000 --backends http://127.0.0.1:20000,http://127.0.0.1:20100
import http from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
    backends: { type: 'string', default: '' },
  },
});

const port = Number(values.port);
const backends = values.backends.split(',').map((s) => s.trim()).filter(Boolean).map((u) => new URL(u));
if (!Number.isInteger(port) || port < 1 || port > 65535 || backends.length === 0) {
  console.error('[proxy] usage: node proxy.js --port PORT --backends URL[,URL…]');
  process.exit(64);
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const counts = new Map(backends.map((b) => [b.origin, 0]));
let next = 0;

const json = (res, status, body) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body) + '\n');
};

/** Sends the buffered request to backend i; on a connection error, tries the remaining ones. */
function forward(req, body, res, i, tries) {
  const backend = backends[i % backends.length];
  const up = http.request(
    { host: backend.hostname, port: backend.port, path: req.url, method: req.method, headers: { ...req.headers, host: backend.host }, agent },
    (upRes) => {
      counts.set(backend.origin, counts.get(backend.origin) + 1);
      res.writeHead(upRes.statusCode ?? 502, { ...upRes.headers, 'x-backend': backend.origin });
      upRes.pipe(res);
    },
  );
  up.on('error', (err) => {
    if (tries + 1 < backends.length) return forward(req, body, res, i + 1, tries + 1);
    json(res, 502, { error: `no backend answered (last: ${backend.origin}: ${err.message})` });
  });
  up.end(body);
}

const server = http.createServer((req, res) => {
  if ((req.url ?? '/').split('?')[0] === '/health') return json(res, 200, { status: 'ok', backends: backends.map((b) => b.origin) });
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => forward(req, Buffer.concat(chunks), res, next++, 0));
});

server.on('error', (err) => {
  console.error(`[proxy] cannot listen: ${err.message}`);
  process.exit(69);
});
server.listen({ port, host: values.host }, () => {
  console.log(`[proxy] listening on ${values.host}:${port} (pid ${process.pid}), round-robin over ${backends.length} backends: ${backends.map((b) => b.origin).join(' ')}`);
});

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    console.log(`[proxy] ${sig}: shutting down; forwarded ${[...counts].map(([b, n]) => `${n} to ${b}`).join(', ')}`);
    server.close();
    server.closeAllConnections?.();
    agent.destroy();
    process.exit(0);
  });
}
