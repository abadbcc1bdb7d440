import { BerthError, EXIT } from '../errors.js';
import { renderHtml } from '../report/html.js';
import { renderText } from '../report/text.js';
import type { PortSpaceReport } from '../report/port-space-report.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { printJson } from './command.js';

/** Print a doctor/inspect report as JSON or text, and write the HTML picture when asked. */
export function emitReport(report: PortSpaceReport, opts: { json?: boolean; html?: string }): void {
  if (opts.html !== undefined) {
    try {
      writeFileAtomic(opts.html, renderHtml(report), 0o644);
    } catch (e) {
      throw new BerthError(EXIT.IOERR, `cannot write the HTML report to ${opts.html}: ${(e as Error).message}`);
    }
    process.stderr.write(`berth: wrote ${opts.html}\n`);
  }
  if (opts.json) printJson(report);
  else process.stdout.write(renderText(report, { color: process.stdout.isTTY === true && !process.env.NO_COLOR }));
}
