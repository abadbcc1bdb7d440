import { BerthError, EXIT } from '../errors.js';
import { ownerCheck } from '../host/proc-facts.js';
import { processStartTime } from '../host/proc-stat.js';
import { timerProblem, TTL } from '../util/duration.js';
import { durationMs, eitherName } from '../util/option-names.js';
import { USER_NAME_CHARS } from './lease-protocol.js';
import { MAX_BLOCK } from './port-set.js';
import { reserveSet, type SetOptions } from './reserve-set.js';
import type { AllocateOptions, PortSource, Reservation } from './allocation-types.js';

function usage(msg: string): BerthError {
  return new BerthError(EXIT.USAGE, msg);
}

const isPort = (p: number) => Number.isInteger(p) && p >= 1 && p <= 65535;

function checkSource(s: PortSource): void {
  if (s.kind === 'port') {
    if (!isPort(s.port)) throw usage(`port ${s.port} is not a port number 1-65535`);
    return;
  }
  const { lo, hi } = s.range;
  if (!isPort(lo) || !isPort(hi) || lo > hi) throw usage(`range ${lo}-${hi} is not a range LO-HI of ports 1-65535 with LO <= HI`);
}

/** The options with the CLI-named ones (owner, ttl) folded into ownerPid/ttlMs. */
export function foldOptionNames(o: AllocateOptions): Omit<AllocateOptions, 'owner' | 'ttl'> {
  const { owner, ttl, ...out } = o;
  const ownerPid = eitherName('owner', owner, 'ownerPid', o.ownerPid);
  if (ownerPid !== undefined) out.ownerPid = ownerPid;
  const ttlMs = eitherName('ttl', ttl === undefined ? undefined : durationMs('ttl', ttl), 'ttlMs', o.ttlMs);
  if (ttlMs !== undefined) out.ttlMs = ttlMs;
  return out;
}

/** Lease and hold `count` distinct ports of a resolved source, all or none. Throws BerthError 69, 74 (descriptors) or 64. */
export async function allocatePorts(options: AllocateOptions): Promise<Reservation> {
  const opts = foldOptionNames(options);
  const count = blockCount(opts) ?? opts.count ?? 1;
  if (!Number.isInteger(count) || count < 1) throw usage(`count ${count}: expected a whole number >= 1`);
  checkSource(opts.source);
  if (opts.block !== undefined && count > 1 && opts.source.kind === 'port')
    throw usage(
      `block ${count} from port ${opts.source.port}: a block needs a range or a band to lie in; give range ` +
        `${opts.source.port}-${opts.source.port + count - 1} for exactly those ports`,
    );
  checkLeaseName(opts.name);
  const set = setOptions(opts);
  const [r] = await reserveSet(
    [
      {
        source: opts.source,
        count,
        ...(opts.block !== undefined ? { block: true } : {}),
        strategy: opts.strategy ?? 'lowest',
        allowEphemeral: opts.allowEphemeral === true,
        allowPrivileged: opts.allowPrivileged === true,
        ...(opts.name !== undefined ? { name: opts.name } : {}),
        ...(opts.holdAddress !== undefined ? { holdAddress: opts.holdAddress } : {}),
        ...(opts.udp === true && opts.block === undefined ? { udp: true } : {}),
      },
    ],
    set,
  );
  return r!;
}

/** Largest pid Linux hands out (pid_max's ceiling, 2^22). */
const MAX_PID = 4_194_304;

/** A lease name is stored in the record every user reads: at most USER_NAME_CHARS characters. Throws BerthError 64. */
export function checkLeaseName(name: string | undefined, flag = 'name'): void {
  if (name === undefined) return;
  const n = [...name].length;
  if (n > USER_NAME_CHARS) throw usage(`${flag} is ${n} characters long; a lease name has at most ${USER_NAME_CHARS} (it is stored in the lease ` +
    `record every user of the host reads)`);
}

/** `block` checked: a block size, which excludes count > 1; undefined without a block. */
export function blockCount(o: Pick<AllocateOptions, 'block' | 'count'>): number | undefined {
  if (o.block === undefined) return undefined;
  if (!Number.isInteger(o.block) || o.block < 1 || o.block > MAX_BLOCK) throw usage(`block ${o.block}: expected a whole number of ports from 1 to ` +
    `${MAX_BLOCK}`);
  if (o.count !== undefined && o.count !== 1) throw usage(`block ${o.block} with count ${o.count}: a block is one run of contiguous ports; ask for ` +
    `one or the other`);
  return o.block;
}

/** The set-wide options of reserve()-style options: owner (checked alive), ttl, hold, where the leases live. */
export function setOptions(opts: Pick<AllocateOptions, 'ownerPid' | 'ttlMs' | 'hold' | 'procRoot' | 'contentionMs' | 'signal'>): SetOptions {
  const set: SetOptions = {};
  if (opts.ownerPid !== undefined) {
    if (!(Number.isInteger(opts.ownerPid) && opts.ownerPid > 0 && opts.ownerPid <= MAX_PID)) throw usage(`owner pid ${opts.ownerPid} is not a running ` +
      `process; the lease would end at once`);
    // The library's own pid is a lease it holds itself (no holder): only another process is checked as an owner.
    if (opts.ownerPid === process.pid) set.owner = { pid: opts.ownerPid, start: processStartTime(opts.ownerPid) ?? 0 };
    else {
      const c = ownerCheck('/proc', opts.ownerPid);
      if ('why' in c) throw usage(c.why);
      set.owner = { pid: opts.ownerPid, start: c.start };
    }
  }
  if (opts.ttlMs !== undefined) {
    const problem = timerProblem(opts.ttlMs, TTL);
    if (problem !== undefined) throw usage(`ttl ${opts.ttlMs}ms ${problem}`);
    set.ttlMs = opts.ttlMs;
  }
  if (opts.hold !== undefined) set.hold = opts.hold;
  if (opts.procRoot !== undefined) set.procRoot = opts.procRoot;
  if (opts.contentionMs !== undefined) set.contentionMs = opts.contentionMs;
  if (opts.signal !== undefined) set.signal = opts.signal;
  return set;
}
