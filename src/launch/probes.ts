import { spawn } from 'node:child_process';
import net from 'node:net';
import { formatDuration } from '../util/duration.js';

/*
 * One attempt of each probe kind. Connections end with a reset once the answer is in: a normal close
 * leaves a TIME_WAIT socket, on the service's port P when the service closes first, and that blocks
 * the next bind(P) of a service without SO_REUSEADDR (docs/run.md). HTTP reads the whole response
 * first (no broken-pipe traceback in the service) and never asks for `Connection: close`: a server
 * told so closes first, and a berth SIGKILLed before its reset would leave the TIME_WAIT on P.
 */

export interface ProbeResult {
  ok: boolean;
  /** "HTTP 200", "HTTP 503", "ECONNREFUSED", "exit 1: <last output>", "timed out after 5s" */
  detail: string;
  ms: number;
  /** The attempt ran out of its time (as opposed to an answer or an error). */
  timedOut?: boolean;
}

const MAX_RESPONSE = 64 * 1024;

function elapsed(t0: bigint): number {
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

function errText(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  return err.code ?? err.message ?? String(e);
}

/** True once `buf` holds a complete HTTP/1.x response (headers and framed body). */
export function responseComplete(buf: Buffer): boolean {
  const head = buf.indexOf('\r\n\r\n');
  if (head < 0) return false;
  const headers = buf.subarray(0, head).toString('latin1').toLowerCase();
  const body = buf.length - head - 4;
  const status = Number(headers.slice(9, 12));
  if (status === 204 || status === 304 || (status >= 100 && status < 200)) return true;
  const cl = /\r\ncontent-length:\s*(\d+)/.exec(headers);
  if (cl) return body >= Number(cl[1]);
  if (/\r\ntransfer-encoding:[^\r]*chunked/.test(headers))
    return buf.subarray(head + 4).includes('\r\n0\r\n\r\n') || buf.subarray(head + 4, head + 9).toString('latin1') === '0\r\n\r\n';
  return false; // framed by close
}

/** GET `path` from host:port (the Host header carries the user's own host text). 2xx is ready. */
export function probeHttp(host: string, port: number, path: string, hostHeader: string, timeoutMs: number): Promise<ProbeResult> {
  const t0 = process.hrtime.bigint();
  return new Promise((resolve) => {
    let done = false;
    let got = Buffer.alloc(0);
    const sock = net.connect({ host, port, allowHalfOpen: true });
    const finish = (detail: string, reset = true, timedOut = false) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const status = /^HTTP\/\d(?:\.\d)? (\d{3})/.exec(got.subarray(0, 16).toString('latin1'));
      const code = status ? Number(status[1]) : undefined;
      if (reset && !sock.destroyed) sock.resetAndDestroy();
      else sock.destroy();
      const ok = code !== undefined && code >= 200 && code < 300;
      resolve({ ok, detail: code !== undefined ? `HTTP ${code}` : detail, ms: elapsed(t0), ...(timedOut && code === undefined ? { timedOut } : {}) });
    };
    const timer = setTimeout(() => finish(`timed out after ${formatDuration(timeoutMs)}`, true, true), timeoutMs);
    sock.on('connect', () => {
      sock.write(`GET ${path} HTTP/1.1\r\nHost: ${hostHeader}\r\nUser-Agent: berth-ready-probe\r\nAccept: */*\r\n\r\n`);
    });
    sock.on('data', (chunk: Buffer) => {
      got = got.length < MAX_RESPONSE ? Buffer.concat([got, chunk]) : got;
      if (got.length >= MAX_RESPONSE || responseComplete(got)) finish('response');
    });
    sock.on('end', () => finish('connection closed without a response'));
    sock.on('error', (e) => finish(errText(e), false));
  });
}

/** A TCP connect to host:port succeeds. */
export function probeTcp(host: string, port: number, timeoutMs: number): Promise<ProbeResult> {
  const t0 = process.hrtime.bigint();
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    const timer = setTimeout(() => {
      sock.destroy();
      resolve({ ok: false, detail: `timed out after ${formatDuration(timeoutMs)}`, ms: elapsed(t0), timedOut: true });
    }, timeoutMs);
    sock.on('connect', () => {
      clearTimeout(timer);
      sock.resetAndDestroy();
      resolve({ ok: true, detail: 'connected', ms: elapsed(t0) });
    });
    sock.on('error', (e) => {
      clearTimeout(timer);
      resolve({ ok: false, detail: errText(e), ms: elapsed(t0) });
    });
  });
}

/**
 * `sh -c command` exits 0. Runs in its own process group so a timed-out attempt is killed
 * whole (a `curl` inside a shell would otherwise outlive it).
 */
export function probeCmd(command: string, env: NodeJS.ProcessEnv, cwd: string | undefined, timeoutMs: number): Promise<ProbeResult> {
  const t0 = process.hrtime.bigint();
  return new Promise((resolve) => {
    let tail = '';
    const keep = (d: Buffer) => {
      tail = (tail + d.toString('utf8')).slice(-2000);
    };
    let child;
    try {
      child = spawn('/bin/sh', ['-c', command], { env, cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      resolve({ ok: false, detail: `cannot run /bin/sh: ${errText(e)}`, ms: elapsed(t0) });
      return;
    }
    const c = child;
    c.stdout.on('data', keep);
    c.stderr.on('data', keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        if (c.pid !== undefined) process.kill(-c.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, timeoutMs);
    c.on('error', (e) => {
      clearTimeout(timer);
      resolve({ ok: false, detail: `cannot run /bin/sh: ${errText(e)}`, ms: elapsed(t0) });
    });
    c.on('close', (code, signal) => {
      clearTimeout(timer);
      const out = tail.trim();
      const why = timedOut ? `timed out after ${formatDuration(timeoutMs)}` : signal ? `killed by ${signal}` : `exit ${code}`;
      resolve({
        ok: code === 0 && !timedOut,
        detail: out ? `${why}: ${out.split('\n').slice(-3).join(' | ')}` : why,
        ms: elapsed(t0),
        ...(timedOut ? { timedOut } : {}),
      });
    });
  });
}
