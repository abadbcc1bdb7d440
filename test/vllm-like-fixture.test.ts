/**
 * The vLLM stand-in itself (test/fixtures/services/vllm-like.py), so the 8-stack test's
 * verdicts rest on known behaviour: it scans upward from VLLM_PORT skipping any port
 * someone holds, serves /health on --port, and exits 98 on EADDRINUSE.
 */
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { requireNetns, runInNetns } from './helpers/netns.js';
import { NEED, requireNeeds } from './helpers/require.js';

const PY = '/usr/bin/python3';
const FIXTURE = resolve('test/fixtures/services/vllm-like.py');

test('vllm-like: scans upward from VLLM_PORT past a held port, serves /health, a second engine on a taken port exits 98', { timeout: 60_000 }, async (t) => {
  if (!requireNeeds(t, NEED.python3, NEED.curl)) return;
  if (!requireNetns(t)) return;
  const script = `
    D=$(mktemp -d) && cd "$D"
    ${PY} -c "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',20001)); s.listen(); print('held', flush=True); time.sleep(30)" > held.$$ &
    H=$!
    while ! grep -q held held.$$ 2>/dev/null; do sleep 0.05; done
    VLLM_PORT=20000 ${PY} "${FIXTURE}" --port 20100 --internal 3 --bind-delay 0.1 > a.$$ 2>&1 &
    A=$!
    for i in $(seq 100); do grep -q ready a.$$ && break; sleep 0.1; done
    cat a.$$
    echo "health=$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:20100/health)"
    VLLM_PORT=20010 ${PY} "${FIXTURE}" --port 20002 --internal 1 --bind-delay 0.1; echo "second=$?"
    env -u VLLM_PORT ${PY} "${FIXTURE}" --port 20200 --internal 2 --bind-delay 0 > c.$$ 2>&1 &
    C=$!
    for i in $(seq 100); do grep -q ready c.$$ && break; sleep 0.1; done
    cat c.$$
    kill $A $C $H; cd /; rm -rf "$D"
  `;
  const r = await runInNetns({ ephemeral: '40000 50000' }, ['sh', '-c', script], { timeoutMs: 50_000 });
  const out = r.stdout + r.stderr;
  assert.match(out, /vllm-like: internal=20000,20002,20003 api=20100/, out);
  assert.match(out, /health=200/, out);
  assert.match(out, /vllm-like: EADDRINUSE port=20002 \(api\)/, out);
  assert.match(out, /second=98/, out);
  // Without VLLM_PORT the kernel picks (bind to port 0): ephemeral ports, as vLLM does.
  const m = /vllm-like: internal=(\d+),(\d+) api=20200/.exec(out);
  assert.ok(m, out);
  for (const p of [Number(m[1]), Number(m[2])]) assert.ok(p >= 40000 && p <= 50000, `${p} is from the ephemeral range`);
});
