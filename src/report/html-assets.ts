// The HTML report's fixed parts: its style sheet, the SVG patterns every strip refers to, and the
// optional script; inline because the page may load nothing from outside.
import { STRIP_WIDTH } from './strip-labels.js';

// Okabe-Ito palette; every meaning also has its own pattern or shape (see the legend).
export const CSS = `
:root{--ink:#1d1d1f;--muted:#5b5b60;--line:#d0d0d5;--bg:#fff;--panel:#f6f6f8;--orange:#E69F00;--sky:#56B4E9;--green:#009E73;--yellow:#F0E442;
--blue:#0072B2;--verm:#D55E00;--purple:#CC79A7}
*{box-sizing:border-box}
body{margin:0;padding:24px 28px 64px;font:14px/1.45 system-ui,-apple-system,"Segoe UI","DejaVu Sans","Liberation Sans",sans-serif;color:var(--ink);
background:var(--bg)}
main{max-width:${STRIP_WIDTH + 40}px;margin:0 auto}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}h3{font-size:15px;margin:18px 0 2px}
.meta{color:var(--muted);margin:0 0 10px}
code,pre,.mono{font-family:ui-monospace,"DejaVu Sans Mono","Liberation Mono",monospace;font-size:13px}
.chips{display:flex;gap:8px;flex-wrap:wrap;margin:8px 0}
.sev{display:inline-flex;align-items:center;gap:5px;padding:1px 8px;border-radius:4px;font-weight:700;font-size:12px;letter-spacing:.03em;white-space:nowrap}
.sev-error{background:var(--verm);color:#fff}.sev-warning{background:var(--orange);color:#000}.sev-info{background:var(--sky);color:#000}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:3px 18px;margin:6px 0;padding:10px 14px;background:var(--panel);border-radius:6px}
.facts dt{color:var(--muted)}.facts dd{margin:0}
figure{margin:6px 0 0}
.strip{display:block;max-width:100%;height:auto;font-family:system-ui,"DejaVu Sans","Liberation Sans",sans-serif}
.track-name{font-size:11px;fill:var(--muted)}
.track-bg{fill:#fbfbfc;stroke:#c9c9ce;stroke-width:1}
.free{fill:#fff;stroke:#9a9aa0;stroke-width:1}.free-label{fill:#5b5b60;font-weight:400;font-style:italic}
.privileged{fill:url(#pat-priv);stroke:#55555a;stroke-width:1}
.ephemeral{fill:url(#pat-eph);stroke:#8a5a00;stroke-width:1}
.reserved{fill:url(#pat-res);stroke:#0a3d62;stroke-width:1}
.band-rect{fill:var(--green);stroke:#003d2c;stroke-width:1.2}.band-rect.alt{fill:#2bb38c}
.band:hover .band-rect{stroke:#000;stroke-width:2}
.conflict{fill:url(#pat-conflict);stroke:#000;stroke-width:1}
.window-line{stroke:#fff;stroke-width:1.2;opacity:.9}
.win-label{font-size:11px;font-weight:700;fill:#fff;paint-order:stroke;stroke:#00000055;stroke-width:2px}
.asked-rect{fill:none;stroke:#000;stroke-width:1.6;stroke-dasharray:5 3}
.band-label,.asked-label{font-size:12px;font-weight:700;fill:var(--ink)}
.asked-label{font-style:italic}
.in-label{font-size:11px;font-weight:600;fill:#000;paint-order:stroke;stroke:#fff;stroke-width:3.5px;stroke-linejoin:round}
.leader{fill:none;stroke:#6e6e73;stroke-width:.8}
.guide{stroke:#3a3a3f;stroke-width:.9;stroke-dasharray:3 3}
.grid{stroke:#ececf0;stroke-width:1}
.axis{stroke:#55555a;stroke-width:1}
.tick{font-size:11px;fill:var(--muted)}
.bound{font-size:11px;font-weight:700;fill:var(--ink)}
.note{font-size:11px;fill:var(--muted);font-style:italic}
.mk-listener{fill:var(--blue);stroke:#fff;stroke-width:.8}
.mk-timewait{stroke:var(--purple);stroke-width:2.4;stroke-linecap:round;fill:none}
.mk-other{fill:#fff;stroke:#000;stroke-width:1.6}
.mk-lease{fill:var(--yellow);stroke:#000;stroke-width:1.3}
.mk-lease-pending{fill:#fff;stroke:#6e6e73;stroke-width:1.3;stroke-dasharray:2 1.5}
.mk-label{font-size:11px;fill:var(--ink)}.mk-tag{fill:#fff;stroke:#c9c9ce;stroke-width:1}
.tip:hover .mk-listener,.tip:hover .mk-other,.tip:hover .mk-lease{stroke:#000;stroke-width:2}
.legend{display:grid;grid-template-columns:repeat(3,1fr);gap:6px 18px;list-style:none;margin:12px 0 0;padding:10px 14px;background:var(--panel);
border-radius:6px}
.legend li{display:flex;align-items:center;gap:8px}.legend svg{flex:none}
#findings ol{list-style:none;margin:0;padding:0}
.finding{margin:10px 0;padding:10px 14px;border:1px solid var(--line);border-left-width:6px;border-radius:6px}
.finding.error{border-left-color:var(--verm)}.finding.warning{border-left-color:var(--orange);border-left-style:dashed}
.finding.info{border-left-color:var(--sky);border-left-style:dotted}
.finding .head{display:flex;gap:10px;align-items:baseline;flex-wrap:wrap}
.finding .code-id{color:var(--muted)}
.finding p{margin:6px 0}
.fix{margin:8px 0 0;padding:8px 10px;background:var(--panel);border-radius:4px}
.fix .how{margin:0 0 4px}
.fix pre{margin:0;padding:6px 8px;background:#fff;border:1px solid var(--line);border-radius:4px;white-space:pre-wrap;overflow-wrap:anywhere}
.fix code{user-select:all}
.none{color:var(--muted);font-style:italic}
.zoom-head{display:flex;gap:10px;align-items:baseline;flex-wrap:wrap}
.clash{color:#000;font-weight:600;background:#fbe3d3;border:1px solid var(--verm);border-radius:4px;padding:0 6px}
table{border-collapse:collapse;width:100%;margin:6px 0;font-size:13px}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--panel);font-weight:600}
td.num{font-variant-numeric:tabular-nums}
td.cmd{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12px;overflow-wrap:anywhere;max-width:420px}
tr.pending td{color:var(--muted)}
footer{margin-top:28px;color:var(--muted);font-size:12px}
#detail{position:fixed;left:16px;right:16px;bottom:12px;max-width:900px;margin:0 auto;padding:8px 12px;background:#1d1d1f;color:#fff;border-radius:6px;
font:12px/1.4 ui-monospace,"DejaVu Sans Mono",monospace;white-space:pre-wrap;box-shadow:0 2px 10px #0005}
#detail[hidden]{display:none}
`;

// Patterns are defined once and referenced by every strip and legend swatch.
export const DEFS = `<svg width="0" height="0" style="position:absolute" aria-hidden="true" focusable="false"><defs>
<pattern id="pat-priv" width="6" height="6" patternUnits="userSpaceOnUse"><rect width="6" height="6" fill="#dcdce0"/>
<path d="M0 1.5H6M0 4.5H6" stroke="#707075" stroke-width="1"/></pattern>
<pattern id="pat-eph" width="7" height="7" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="7" height="7" fill="#f7d48b"/>
<path d="M0 0V7" stroke="#E69F00" stroke-width="3"/></pattern>
<pattern id="pat-res" width="6" height="6" patternUnits="userSpaceOnUse"><rect width="6" height="6" fill="#56B4E9"/>
<circle cx="3" cy="3" r="1.4" fill="#0a3d62"/></pattern>
<pattern id="pat-conflict" width="8" height="8" patternUnits="userSpaceOnUse"><rect width="8" height="8" fill="#D55E00"/>
<path d="M0 0L8 8M8 0L0 8" stroke="#2b0f00" stroke-width="1.4"/></pattern>
</defs></svg>`;

// Progressive enhancement only: shows a marker's <title> at once in a bar at the bottom.
export const SCRIPT = `(()=>{const d=document.getElementById('detail');if(!d)return;const show=e=>{const t=e.target instanceof ` +
  `Element?e.target.closest('.tip'):null;const s=t&&t.querySelector(':scope>title');if(s){d.textContent=s.textContent;d.hidden=false}else ` +
    `d.hidden=true};document.addEventListener('mouseover',show);document.addEventListener('focusin',show)})();`;
