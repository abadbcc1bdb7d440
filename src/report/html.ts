// The port-space picture as ONE self-contained HTML file: inline CSS and SVG (a CSP forbids anything
// external), readable without JavaScript (SVG <title> has the exact numbers), the report JSON embedded.
import { createHash } from 'node:crypto';
import { formatRange } from '../host/intervals.js';
import type { Finding, Severity } from '../layout/layout-model.js';
import {
  bandSizeText, endpoint, expiryText, fixCode, formatArgv, formatRanges, leaseJobText, leaseOwnerText,
  orderedCounts, placeText, plural, privilegedText, socketOwnerText, stateText, withoutPeer,
} from './format.js';
import { ephemeralOverlap, zoomDomain } from './geometry.js';
import { esc, h, scriptJson, v } from './markup.js';
import { renderStrip, zoomTargets } from './strip.js';
import type { PortSpaceReport } from './port-space-report.js';
import { CSS, DEFS, SCRIPT } from './html-assets.js';
import { instanceCount } from '../layout/windows.js';
import { cleanText } from '../util/clean-text.js';

const SEV_MARK: Record<Severity, { icon: string; word: string }> = {
  error: { icon: '✖', word: 'ERROR' },
  warning: { icon: '▲', word: 'WARNING' },
  info: { icon: '●', word: 'INFO' },
};

function sevBadge(s: Severity): string {
  return h('span', { class: `sev sev-${s}` }, h('span', { 'aria-hidden': 'true' }, SEV_MARK[s].icon), SEV_MARK[s].word);
}

function swatch(inner: string): string {
  return h('svg', { width: 30, height: 18, viewBox: '0 0 30 18', 'aria-hidden': 'true' }, inner);
}

function legend(report: PortSpaceReport): string {
  const hst = report.host;
  const box = (cls: string) => v('rect', { x: 1, y: 2, width: 28, height: 14, class: cls });
  const items: [string, string][] = [
    [box('privileged'), `privileged ${privilegedText(hst.unprivilegedStart)}: root only`],
    [box('free'), 'room for bands: not privileged, not ephemeral'],
    [box('ephemeral'), `ephemeral ${formatRange(hst.ephemeral)}: source ports of connect()`],
    [box('reserved'), 'reserved: never picked as a source port'],
    [box('band-rect') + v('path', { d: 'M15 4V14', class: 'window-line' }), 'band; white lines split instance windows'],
    [box('conflict'), 'CONFLICT: band in unreserved ephemeral ports'],
    [v('rect', { x: 2, y: 3, width: 26, height: 12, class: 'asked-rect' }), 'range asked with --range or --port'],
    [v('path', { d: 'M9.5 4H20.5L15 14Z', class: 'mk-listener' }), 'listener (LISTEN): port, command, pid'],
    [v('path', { d: 'M11 5l8 8m0 -8l-8 8', class: 'mk-timewait' }), 'TIME_WAIT socket: blocks a later bind()'],
    [v('circle', { cx: 15, cy: 9, r: 4, class: 'mk-other' }), 'other socket: ESTABLISHED, SYN_SENT, …'],
    [v('path', { d: 'M15 3.5l5.5 5.5l-5.5 5.5l-5.5 -5.5Z', class: 'mk-lease' }), 'live lease: port promised to its owner'],
    [v('path', { d: 'M15 3.5l5.5 5.5l-5.5 5.5l-5.5 -5.5Z', class: 'mk-lease-pending' }), 'pending lease: a set in progress (port name, no record yet)'],
    [v('path', { d: 'M15 1V17', class: 'guide' }), 'range boundary (port in bold under the axis)'],
  ];
  // Only what can appear: no band entries without a layout, no asked-range entry without --range.
  const hide = new Set<string>([...(report.layout ? [] : ['band-rect', 'conflict']), ...(report.ranges.length > 0 ? [] : ['asked-rect'])]);
  const shown = items.filter(([sw]) => ![...hide].some((cls) => sw.includes(`class="${cls}"`)));
  return h('ul', { class: 'legend', id: 'legend', 'aria-label': 'Legend' }, ...shown.map(([sw, label]) => h('li', {}, swatch(sw), h('span', {}, esc(label)))));
}

function findingItem(f: Finding, report: PortSpaceReport): string {
  const bands = report.layout?.bands ?? [];
  const where: string[] = [];
  if (f.band !== undefined) where.push(`band ${f.band}`);
  if (f.ranges && f.ranges.length > 0) where.push(`ports ${formatRanges(f.ranges)}`);
  const fixes = (f.fixes ?? []).map((fix, i) =>
    h(
      'div',
      { class: `fix fix-${fix.kind}`, 'data-kind': fix.kind },
      h(
        'p',
        { class: 'how' },
        h('strong', {}, i === 0 ? 'Fix: ' : 'Or: '),
        esc(fix.description),
        fix.kind === 'band-range' ? esc(` (in ${report.layout?.source ?? 'the layout file'})`) : '',
      ),
      h('pre', {}, h('code', {}, esc(fixCode(fix, bands)))),
    ),
  );
  return h(
    'li',
    { class: `finding ${f.severity}`, 'data-code': f.code, 'data-severity': f.severity },
    h(
      'div',
      { class: 'head' },
      sevBadge(f.severity),
      h('code', { class: 'code-id' }, esc(f.code)),
      where.length > 0 ? h('span', {}, esc(where.join(', '))) : '',
    ),
    h('p', {}, esc(f.message)),
    ...fixes,
  );
}

function findingsSection(report: PortSpaceReport): string {
  const s = report.summary;
  const body =
    report.findings.length === 0
      ? h('p', { class: 'none' }, report.kind === 'doctor' ? 'No findings: the layout is safe on this host.' : 'No findings.')
      : h('ol', {}, ...report.findings.map((f) => findingItem(f, report)));
  return h(
    'section',
    { id: 'findings' },
    h('h2', {}, esc(`Findings: ${plural(s.errors, 'error')}, ${plural(s.warnings, 'warning')}, ${plural(s.infos, 'info', 'infos')}`)),
    body,
  );
}

function factsSection(report: PortSpaceReport): string {
  const hst = report.host;
  const counts = orderedCounts(report.socketCounts).map(([k, n]) => `${k} ${n}`).join(', ');
  const rows: [string, string][] = [
    ['unprivileged start', `${hst.unprivilegedStart} (net.ipv4.ip_unprivileged_port_start)`],
    ['ephemeral range', `${formatRange(hst.ephemeral)} (net.ipv4.ip_local_port_range)`],
    ['reserved ports', `${formatRanges(hst.reserved)} (net.ipv4.ip_local_reserved_ports)`],
    ['unreserved ephemeral', `${formatRanges(hst.unreservedEphemeral)} (any outgoing connect() may take these)`],
    ['IPv6', hst.ipv6 ? 'yes' : 'no'],
    ['network namespace', hst.netns],
    ['sockets on host', counts || 'none'],
  ];
  if (hst.skippedLines > 0) rows.push(['skipped lines', `${hst.skippedLines} malformed socket-table line(s)`]);
  if (report.layout) rows.push(['layout', `${report.layout.source}: ${plural(report.layout.bands.length, 'band')}`]);
  if (report.ranges.length > 0) rows.push(['asked ranges', formatRanges(report.ranges)]);
  return h('dl', { class: 'facts', id: 'host' }, ...rows.map(([k, val]) => h('dt', {}, esc(k)) + h('dd', { class: 'mono' }, esc(val))));
}

/** A table with its header row; with no rows, the `none` paragraph in its place. */
function table(id: string, heads: string[], rows: string[], none = ''): string {
  if (rows.length === 0) return h('p', { class: 'none', id }, none);
  return h('table', { id }, h('thead', {}, h('tr', {}, ...heads.map((c) => h('th', {}, c)))), h('tbody', {}, ...rows));
}

function bandsTable(report: PortSpaceReport): string {
  const bands = report.layout?.bands ?? [];
  if (bands.length === 0) return '';
  const rows = bands.map((b) => {
    const clash = ephemeralOverlap(b, report.host.unreservedEphemeral);
    return h(
      'tr',
      { 'data-band': b.name },
      h('td', {}, h('strong', {}, esc(b.name))),
      h('td', { class: 'num mono' }, esc(formatRange(b))),
      h('td', { class: 'num' }, String(b.hi - b.lo + 1)),
      h('td', { class: 'num' }, b.window ? `${b.window} × ${instanceCount(b)}` : '—'),
      h('td', {}, clash.length > 0 ? h('span', { class: 'clash' }, esc(`CONFLICT ${formatRanges(clash)} in the unreserved ephemeral range`)) : 'clear'),
    );
  });
  return table('bands', ['Band', 'Ports', 'Size', 'Window × instances', 'Ephemeral range'], rows);
}

/** All bands in one strip when they sit in a small part of the port space (they usually do), so neighbours and boundaries show. */
function layoutOverview(report: PortSpaceReport): string {
  const bands = report.layout?.bands ?? [];
  if (bands.length < 2) return '';
  const span = { lo: Math.min(...bands.map((b) => b.lo)), hi: Math.max(...bands.map((b) => b.hi)) };
  if (span.hi - span.lo + 1 > 65536 * 0.4) return '';
  const domain = zoomDomain(span, { padFraction: 0.05 });
  return h(
    'figure',
    { id: 'layout-overview' },
    h('figcaption', { class: 'zoom-head' }, h('h3', {}, esc(`All bands: ports ${formatRange(domain)}`))),
    renderStrip({ id: 'strip-layout', domain, report, detail: false, label: `The layout's bands, ports ${formatRange(domain)}` }),
  );
}

function zoomSection(report: PortSpaceReport): string {
  const targets = zoomTargets(report);
  if (targets.length === 0) return '';
  const figs = targets.map((t, i) => {
    const domain = zoomDomain(t.range, { minSpan: 64 });
    const inRange = (p: number) => p >= t.range.lo && p <= t.range.hi;
    const nSock = report.sockets.filter((r) => inRange(r.localPort)).length;
    const nLease = report.leases.filter((l) => inRange(l.port)).length;
    const clash = ephemeralOverlap(t.range, report.host.unreservedEphemeral);
    const name = t.band ? `Band ${t.band.name} ${formatRange(t.band)}` : t.range.lo === t.range.hi ? `Port ${t.range.lo}` : `Range ${formatRange(t.range)}`;
    const facts = [t.band ? bandSizeText(t.band) : plural(t.range.hi - t.range.lo + 1, 'port'), plural(nSock, 'socket'), plural(nLease, 'lease')].join(' · ');
    const id = t.band ? `zoom-band-${i}` : `zoom-range-${i}`;
    return h(
      'figure',
      { class: 'zoom-fig', id: `${id}-fig`, 'data-band': t.band?.name, 'data-lo': t.range.lo, 'data-hi': t.range.hi },
      h(
        'figcaption',
        { class: 'zoom-head' },
        h('h3', {}, esc(name)),
        h('span', { class: 'meta' }, esc(facts)),
        clash.length === 0
          ? ''
          : t.band
            ? h('span', { class: 'clash' }, esc(`CONFLICT: ${formatRanges(clash)} in the unreserved ephemeral range`))
            : h('span', { class: 'meta' }, esc(`unreserved ephemeral: ${formatRanges(clash)}`)),
      ),
      renderStrip({ id, domain, report, detail: true, label: `${name}, shown as ports ${formatRange(domain)}` }),
    );
  });
  return h('section', { id: 'zooms' }, h('h2', {}, 'Bands and asked ranges, zoomed'), ...figs);
}

function socketsTable(report: PortSpaceReport): string {
  const bands = report.layout?.bands ?? [];
  const rows = [...report.sockets].sort((a, b) => a.localPort - b.localPort).map((r) =>
    h(
      'tr',
      { class: `sock-row state-${r.state.toLowerCase()}${r.protocol === 'udp' ? ' udp' : ''}`, 'data-port': r.localPort, 'data-pid': r.owners?.[0]?.pid ?? '' },
      h('td', { class: 'num mono' }, String(r.localPort)),
      h('td', {}, esc(placeText(r.localPort, bands) || '—')),
      h('td', {}, esc(stateText(r))),
      h('td', {}, `v${r.family}`),
      h('td', { class: 'mono' }, esc(r.localAddress)),
      h('td', { class: 'mono' }, withoutPeer(r) ? '—' : esc(endpoint(r.remoteAddress, r.remotePort))),
      h('td', {}, esc(socketOwnerText(r))),
      h('td', { class: 'cmd' }, r.owners?.[0] ? esc(formatArgv(r.owners[0].cmdline)) : ''),
      h('td', { class: 'num' }, String(r.uid)),
      h('td', { class: 'num' }, String(r.inode)),
    ),
  );
  const heads = ['Port', 'Band', 'State', 'IP', 'Local', 'Remote', 'Owner', 'Command line', 'UID', 'Inode'];
  return h('h3', {}, esc(`Sockets (${report.sockets.length})`)) + table('sockets', heads, rows, 'No sockets in the bands or asked ranges.');
}

function leasesTable(report: PortSpaceReport): string {
  const bands = report.layout?.bands ?? [];
  const reportTime = Date.parse(report.generatedAt);
  const rows = [...report.leases].sort((a, b) => a.port - b.port).map((l) =>
    h(
      'tr',
      { class: l.live ? 'lease-row live' : 'lease-row pending', 'data-port': l.port },
      h('td', { class: 'num mono' }, String(l.port)),
      h('td', {}, esc(placeText(l.port, bands) || '—')),
      h('td', {}, esc(l.name ?? '—')),
      h('td', {}, l.live ? 'live' : 'pending'),
      h('td', {}, esc(leaseOwnerText(l))),
      h('td', {}, esc(expiryText(l, reportTime))),
      h('td', {}, esc(leaseJobText(l) || '—')),
      h('td', { class: 'mono' }, l.createdAt !== undefined && Number.isFinite(l.createdAt) ? esc(new Date(l.createdAt).toISOString()) : '—'),
      h('td', {}, esc(`pid ${l.createdBy}`)),
    ),
  );
  const heads = ['Port', 'Band', 'Name', 'State', 'Owner', 'Expires', 'Slurm job', 'Created', 'Created by'];
  return h('h3', {}, esc(`Leases (${report.leases.length})`)) + table('leases', heads, rows, 'No leases.');
}

/** The whole page. Deterministic: the same report gives the same bytes. */
export function renderHtml(report: PortSpaceReport): string {
  const hash = createHash('sha256').update(SCRIPT).digest('base64');
  const csp = `default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-${hash}'; img-src data:; base-uri 'none'; form-action 'none'`;
  const s = report.summary;
  const heading = `berth ${report.kind} — ${cleanText(report.hostname)}`;
  const chips = (['error', 'warning', 'info'] as const).map((sev) =>
    h('span', { class: `sev sev-${sev}` }, esc(`${SEV_MARK[sev].icon} ${plural(s[`${sev}s`], sev)}`)),
  );
  const full = renderStrip({ id: 'strip-full', domain: { lo: 0, hi: 65535 }, report, detail: false, ids: true, label: 'All TCP ports 0-65535 on this host' });
  const body = h(
    'main',
    {},
    h(
      'header',
      {},
      h('h1', {}, esc(heading)),
      h('p', { class: 'meta' }, esc(`${report.generatedAt} · ${report.host.netns}${report.layout ? ` · layout ${report.layout.source}` : ''}`)),
      h('div', { class: 'chips', id: 'summary' }, ...chips),
    ),
    h(
      'section',
      { id: 'port-space' },
      h('h2', {}, 'Port space 0-65535'),
      h('p', { class: 'meta' }, 'To scale. Hover any mark for its exact numbers; every band and asked range is zoomed further down.'),
      h('figure', {}, full),
      layoutOverview(report),
      legend(report),
    ),
    findingsSection(report),
    h('section', { id: 'host-layout' }, h('h2', {}, report.layout ? 'Host and layout' : 'Host'), factsSection(report), bandsTable(report)),
    zoomSection(report),
    h('section', { id: 'tables' }, h('h2', {}, 'Sockets and leases in the bands and asked ranges'), socketsTable(report), leasesTable(report)),
    h(
      'footer',
      {},
      esc('Made by berth. Hover any mark for exact numbers. The complete report (the same JSON as --json) is embedded in this file: script#berth-data.'),
    ),
  );
  return [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    v('meta', { charset: 'utf-8' }),
    v('meta', { 'http-equiv': 'Content-Security-Policy', content: csp }),
    v('meta', { name: 'viewport', content: 'width=device-width, initial-scale=1' }),
    v('meta', { name: 'generator', content: 'berth' }),
    h('title', {}, esc(heading)),
    h('style', {}, CSS),
    '</head>',
    '<body>',
    DEFS,
    body,
    h('div', { id: 'detail', hidden: true, role: 'status', 'aria-live': 'polite' }),
    `<script type="application/json" id="berth-data">${scriptJson(report)}</script>`,
    `<script>${SCRIPT}</script>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}
