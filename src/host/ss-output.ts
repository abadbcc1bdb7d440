import { formatIPv6 } from './proc-net-address.js';
import type { PortRange, SocketProtocol, SocketRow, SocketTable, TcpState } from './host-map.js';

/*
 * `ss -tanHOe` output as the rows /proc/net/tcp{,6} gives (same address text, state names, uid
 * and inode). One line per socket (-O), no header (-H):
 *
 *   STATE  RECV-Q SEND-Q LOCAL:PORT PEER:PORT [timer:(…)] [uid:U] ino:I sk:… [cgroup:…] …
 *
 * ss drops the state column when the filter names one state, and adds a Netid column with `-t -u`:
 * the caller then says the state or protocol. uid: is printed only when not 0. "*" is the dual-stack
 * any address (port "*" is 0); "%IFNAME" may follow. IPv6 text is reparsed and formatted as the
 * /proc parser does, so the readers agree whatever inet_ntop's style.
 */

const STATE_NAMES: Record<string, TcpState> = {
  ESTAB: 'ESTABLISHED',
  'SYN-SENT': 'SYN_SENT',
  'SYN-RECV': 'SYN_RECV',
  'FIN-WAIT-1': 'FIN_WAIT1',
  'FIN-WAIT-2': 'FIN_WAIT2',
  'TIME-WAIT': 'TIME_WAIT',
  UNCONN: 'CLOSE',
  'CLOSE-WAIT': 'CLOSE_WAIT',
  'LAST-ACK': 'LAST_ACK',
  LISTEN: 'LISTEN',
  CLOSING: 'CLOSING',
  'NEW-SYN-RECV': 'NEW_SYN_RECV',
  UNKNOWN: 'UNKNOWN',
};

/** ss's name of each state (fixtures and property tests). */
export const SS_STATE_NAME: Readonly<Record<TcpState, string>> = Object.fromEntries(Object.entries(STATE_NAMES).map(([k, v]) => [v, k])) as Record<
  TcpState,
  string
>;

export interface ParseSsOptions {
  /** The state of every row when the output has no state column (the filter named one state). */
  onlyState?: TcpState;
  /** The protocol of every row when the output has no Netid column (one protocol asked). Default 'tcp'. */
  protocol?: SocketProtocol;
}

const NETIDS: Record<string, SocketProtocol> = { tcp: 'tcp', udp: 'udp' };

const DIGITS = /^\d{1,10}$/;

/** 16 bytes of an IPv6 address in text (RFC 4291 §2.2 forms), undefined when not one. */
export function parseIPv6(text: string): Uint8Array | undefined {
  if (text.length < 2 || text.length > 45) return undefined;
  let head = text;
  let tail4: number[] | undefined;
  if (text.includes('.')) {
    // An IPv4 tail ("::ffff:127.0.0.1"): the last 32 bits, written as a dotted quad.
    const lastColon = text.lastIndexOf(':');
    tail4 = parseIPv4(text.slice(lastColon + 1));
    if (tail4 === undefined) return undefined;
    head = text.slice(0, lastColon + 1);
    if (!head.endsWith('::')) head = head.slice(0, -1);
  }
  const groupsWanted = tail4 ? 6 : 8;
  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const parseGroups = (s: string): number[] | undefined => {
    if (s === '') return [];
    const out: number[] = [];
    for (const g of s.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const left = parseGroups(halves[0] as string);
  const right = halves.length === 2 ? parseGroups(halves[1] as string) : [];
  if (left === undefined || right === undefined) return undefined;
  let groups: number[];
  if (halves.length === 2) {
    const fill = groupsWanted - left.length - right.length;
    if (fill < 1) return undefined;
    groups = [...left, ...new Array<number>(fill).fill(0), ...right];
  } else {
    groups = left;
  }
  if (groups.length !== groupsWanted) return undefined;
  const bytes = new Uint8Array(16);
  groups.forEach((g, k) => {
    bytes[2 * k] = g >> 8;
    bytes[2 * k + 1] = g & 255;
  });
  if (tail4) bytes.set(tail4, 12);
  return bytes;
}

function parseIPv4(text: string): number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return undefined;
    const v = Number(p);
    if (v > 255) return undefined;
    out.push(v);
  }
  return out;
}

/** Address texts seen in one output, so each distinct one is formatted once. */
class Addresses {
  private readonly cache = new Map<string, { family: 4 | 6; text: string } | null>();

  get(raw: string): { family: 4 | 6; text: string } | undefined {
    let hit = this.cache.get(raw);
    if (hit === undefined) {
      hit = this.parse(raw) ?? null;
      this.cache.set(raw, hit);
    }
    return hit ?? undefined;
  }

  private parse(raw: string): { family: 4 | 6; text: string } | undefined {
    if (raw === '*') return { family: 6, text: '::' };
    if (raw.startsWith('[')) {
      if (!raw.endsWith(']')) return undefined;
      const bytes = parseIPv6(raw.slice(1, -1));
      return bytes ? { family: 6, text: formatIPv6(bytes) } : undefined;
    }
    const v4 = parseIPv4(raw);
    return v4 ? { family: 4, text: v4.join('.') } : undefined;
  }
}

/** Split "ADDR[%IF]:PORT" into address text and port; undefined when malformed. */
function splitEndpoint(token: string): { addr: string; port: number } | undefined {
  const colon = token.lastIndexOf(':');
  if (colon <= 0) return undefined;
  let addr = token.slice(0, colon);
  const portText = token.slice(colon + 1);
  let port: number;
  if (portText === '*') port = 0;
  else if (/^\d{1,5}$/.test(portText) && Number(portText) <= 65535) port = Number(portText);
  else return undefined;
  // A device name never holds ':' or '%' (dev_valid_name), and no address holds '%' but before it.
  const pct = addr.lastIndexOf('%');
  if (pct > 0 && (!addr.startsWith('[') || pct > addr.lastIndexOf(']'))) addr = addr.slice(0, pct);
  return { addr, port };
}

/** One line of output as a row; undefined when it does not have the shape above. */
function parseLine(line: string, addrs: Addresses, opts: ParseSsOptions): SocketRow | undefined {
  const tokens = line.split(/[ \t]+/).filter((t) => t !== '');
  let i = 0;
  let protocol: SocketProtocol = opts.protocol ?? 'tcp';
  if (tokens[0] !== undefined && Object.hasOwn(NETIDS, tokens[0])) {
    protocol = NETIDS[tokens[0]]!;
    i = 1;
  }
  let state: TcpState | undefined;
  const first = tokens[i];
  if (first === undefined) return undefined;
  if (Object.hasOwn(STATE_NAMES, first)) {
    state = STATE_NAMES[first];
    i++;
  } else if (DIGITS.test(first)) {
    state = opts.onlyState;
  }
  if (state === undefined) return undefined;
  // Recv-Q, Send-Q
  if (!DIGITS.test(tokens[i] ?? '') || !DIGITS.test(tokens[i + 1] ?? '')) return undefined;
  const local = splitEndpoint(tokens[i + 2] ?? '');
  const peer = splitEndpoint(tokens[i + 3] ?? '');
  if (!local || !peer) return undefined;
  const la = addrs.get(local.addr);
  const ra = addrs.get(peer.addr);
  if (!la || !ra) return undefined;
  if (la.family !== ra.family) return undefined;
  const family = la.family;
  let uid = 0;
  let inode: number | undefined;
  let sawSk = false;
  // Details up to "sk:" only: what follows (cgroup paths…) may hold any text.
  for (let k = i + 4; k < tokens.length; k++) {
    const t = tokens[k] as string;
    if (t.startsWith('sk:')) {
      sawSk = true;
      break;
    }
    if (t.startsWith('uid:') || t.startsWith('ino:')) {
      const v = t.slice(4);
      if (!DIGITS.test(v)) return undefined;
      if (t.startsWith('uid:')) uid = Number(v);
      else inode = Number(v);
    }
  }
  // -e always prints "ino:… sk:…": a line without both (cut short, maybe inside the inode) cannot be trusted.
  if (inode === undefined || !sawSk) return undefined;
  return {
    protocol,
    family,
    localAddress: la.text,
    localPort: local.port,
    remoteAddress: ra.text,
    remotePort: peer.port,
    state,
    uid,
    inode,
  };
}

/** Rows of `ss -tanHOe …` (or `-tuanHOe`) output, in its order; lines of another shape are counted in `skipped`. */
export function parseSsOutput(text: string, opts: ParseSsOptions = {}): SocketTable {
  const addrs = new Addresses();
  const rows: SocketRow[] = [];
  let skipped = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const row = parseLine(line, addrs, opts);
    if (row) rows.push(row);
    else skipped++;
  }
  return { rows, skipped };
}

/** `ss` arguments for sockets on normalized `ports` (all when undefined); listenOnly with UDP also asks for UNCONN (the caller drops TCP CLOSE rows). */
export function ssArgs(ports: readonly PortRange[] | undefined, listenOnly: boolean, udp = false): string[] {
  const states = listenOnly ? (udp ? ['state', 'listening', 'state', 'unconnected'] : ['state', 'listening']) : ['state', 'all'];
  const args = ['-t', ...(udp ? ['-u'] : []), '-a', '-n', '-H', '-O', '-e', ...states];
  if (ports !== undefined) {
    const terms = ports.map((r) => (r.lo === r.hi ? `sport = :${r.lo}` : `( sport >= :${r.lo} and sport <= :${r.hi} )`));
    if (terms.length === 0) throw new Error('ssArgs: no port range (read nothing instead)');
    args.push(`( ${terms.join(' or ')} )`);
  }
  return args;
}
