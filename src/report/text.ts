// Human text of `berth doctor` / `berth inspect`: plain columns that read the same in a
// terminal and in a Slurm log (ASCII markers, colour only when asked).
import { formatRange } from '../host/intervals.js';
import type { Finding, Severity } from '../layout/layout-model.js';
import {
  bandText, endpoint, expiryText, fixCode, formatArgv, formatRanges, leaseJobText, leaseOwnerText,
  orderedCounts, placeText, plural, privilegedText, socketOwnerText, stateText, withoutPeer,
} from './format.js';
import { ephemeralOverlap } from './geometry.js';
import type { PortSpaceReport } from './port-space-report.js';
import { cleanText } from '../util/clean-text.js';

export interface TextOptions {
  /** ANSI colour; the caller decides (TTY, NO_COLOR). Default false. */
  color?: boolean;
}

type Paint = (code: string, s: string) => string;

const SEVERITY: Record<Severity, { tag: string; code: string }> = {
  error: { tag: '[ERROR]', code: '1;31' },
  warning: { tag: '[WARN] ', code: '1;33' },
  info: { tag: '[INFO] ', code: '1;36' },
};

/** A table cell: text, or [ANSI code, text] to paint after padding (escapes have no width). */
type Cell = string | [string, string];

const cellText = (c: Cell): string => (typeof c === 'string' ? c : c[1]);

/** Left-aligned columns; the last column is not padded so lines carry no trailing blanks. */
function table(header: string[], rows: Cell[][], paint: Paint, indent = '  '): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => cellText(r[i] ?? '').length)));
  const line = (cells: Cell[]) => {
    const parts = cells.map((c, i) => {
      const text = i === cells.length - 1 ? cellText(c) : cellText(c).padEnd(widths[i] ?? 0);
      return typeof c === 'string' || cellText(c) === '' ? text : paint(c[0], text);
    });
    return (indent + parts.join('  ')).trimEnd();
  };
  return [paint('2', line(header)), ...rows.map(line)];
}

function findingLines(f: Finding, report: PortSpaceReport, paint: Paint): string[] {
  const sev = SEVERITY[f.severity];
  const where = [f.band !== undefined ? `band ${cleanText(f.band)}` : '', f.ranges && f.ranges.length > 0 ? `ports ${formatRanges(f.ranges)}` : '']
    .filter(Boolean)
    .join(', ');
  const out = [`  ${paint(sev.code, sev.tag)} ${cleanText(f.code)}${where ? ` (${where})` : ''}`, `          ${cleanText(f.message)}`];
  const bands = report.layout?.bands ?? [];
  (f.fixes ?? []).forEach((fix, i) => {
    out.push(`          ${i === 0 ? 'fix:' : 'or: '} ${cleanText(fix.description)}`);
    out.push(`${' '.repeat(15)}${paint('1', fixCode(fix, bands))}`);
  });
  return out;
}

export function renderText(report: PortSpaceReport, opts: TextOptions = {}): string {
  const paint: Paint = opts.color ? (code, s) => `\x1b[${code}m${s}\x1b[0m` : (_c, s) => s;
  const h = report.host;
  const bands = report.layout?.bands ?? [];
  const reportTime = Date.parse(report.generatedAt);
  const out: string[] = [];

  out.push(paint('1', `berth ${report.kind}  ${cleanText(report.hostname)}  ${cleanText(h.netns)}  ${cleanText(report.generatedAt)}`), '');

  out.push(paint('1', 'Host ports'));
  const counts = orderedCounts(report.socketCounts).map(([s, n]) => `${s} ${n}`).join(', ');
  out.push(
    ...table(
      ['', ''],
      [
        ['privileged', `${privilegedText(h.unprivilegedStart)}  (below net.ipv4.ip_unprivileged_port_start = ${h.unprivilegedStart})`],
        ['ephemeral range', `${formatRange(h.ephemeral)}  (net.ipv4.ip_local_port_range)`],
        ['reserved', `${formatRanges(h.reserved)}  (net.ipv4.ip_local_reserved_ports)`],
        ['unreserved ephemeral', `${formatRanges(h.unreservedEphemeral)}  (any outgoing connect() may take these)`],
        ['IPv6', h.ipv6 ? 'yes' : 'no'],
        ['sockets on host', counts || 'none'],
        ...(h.skippedLines > 0 ? [['skipped lines', `${h.skippedLines} malformed socket-table line(s)`]] : []),
      ],
      paint,
    ).slice(1),
  );

  if (report.layout) {
    out.push('', paint('1', `Layout ${cleanText(report.layout.source)}`));
    if (bands.length === 0) out.push('  no bands');
    const rows = bands.map((b): Cell[] => {
      const clash = ephemeralOverlap(b, h.unreservedEphemeral);
      return [cleanText(b.name), bandText(b), ['1;31', clash.length > 0 ? `in unreserved ephemeral range: ${formatRanges(clash)}` : '']];
    });
    if (rows.length > 0) out.push(...table(['BAND', 'PORTS', ''], rows, paint).slice(1));
  }

  if (report.ranges.length > 0) out.push('', `${paint('1', 'Asked ranges')} ${formatRanges(report.ranges)}`);

  const s = report.summary;
  if (report.kind === 'doctor' || report.findings.length > 0) {
    out.push('', paint('1', `Findings: ${plural(s.errors, 'error')}, ${plural(s.warnings, 'warning')}, ${plural(s.infos, 'info', 'infos')}`));
    if (report.findings.length === 0) out.push('  none: the layout is safe on this host');
    for (const f of report.findings) out.push(...findingLines(f, report, paint));
  }

  // `inspect` alone: the listeners (the other states are counted above), and how to see the rest.
  const heading =
    report.socketScope === 'listening'
      ? `Listening sockets (${report.sockets.length}; --port P or --range LO-HI lists every state)`
      : `Sockets in bands and asked ranges (${report.sockets.length})`;
  out.push('', paint('1', heading));
  if (report.sockets.length === 0) out.push('  none');
  else {
    const rows = [...report.sockets].sort((a, b) => a.localPort - b.localPort).map((r) => [
      String(r.localPort),
      stateText(r),
      r.localAddress,
      withoutPeer(r) ? '-' : endpoint(r.remoteAddress, r.remotePort),
      placeText(r.localPort, bands) || '-',
      socketOwnerText(r),
      r.owners && r.owners[0] ? formatArgv(r.owners[0].cmdline) : '',
    ]);
    out.push(...table(['PORT', 'STATE', 'LOCAL', 'REMOTE', 'BAND', 'OWNER', 'COMMAND'], rows, paint));
  }

  out.push('', paint('1', `Leases (${report.leases.length})`));
  if (report.leases.length === 0) out.push('  none');
  else {
    const rows = [...report.leases]
      .sort((a, b) => a.port - b.port)
      .map((l): Cell[] => [
        String(l.port),
        l.name !== undefined ? cleanText(l.name) : '-',
        l.live ? 'live' : ['33', 'pending'],
        leaseOwnerText(l),
        expiryText(l, reportTime),
        leaseJobText(l) || '-',
        placeText(l.port, bands) || '-',
      ]);
    out.push(...table(['PORT', 'NAME', 'STATE', 'OWNER', 'EXPIRES', 'JOB', 'BAND'], rows, paint));
  }
  return `${out.join('\n')}\n`;
}
