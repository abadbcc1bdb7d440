import { closeSync, constants, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../util/atomic-write.js';
import { applyUpdate, formatEvent, type EndpointsDocument } from './endpoints.js';

/*
 * After berth died, its watchdog has stopped the services: the run directory must not keep
 * claiming them. Every replica still running becomes `exited`, in events.jsonl too, and the
 * document gets `ended`, so a reader needs no liveness check of its own.
 */

/** Marks the run of the dead berth `berthPid` as over. Returns how many replicas were marked; throws I/O errors. */
export function markRunGone(runDir: string, berthPid: number, now: Date = new Date()): number {
  const file = join(runDir, 'endpoints.json');
  let doc: EndpointsDocument;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8')) as EndpointsDocument;
  } catch {
    return 0; // never written, or not ours to read: nothing claims anything
  }
  // Another run's document (the directory was reused), or one already marked.
  if (doc.pid !== berthPid || doc.ended || !Array.isArray(doc.replicas)) return 0;
  const detail = `berth (pid ${berthPid}) died; its watchdog stopped the service`;
  const events: string[] = [];
  for (const r of doc.replicas) {
    if (r.state === 'exited' || r.state === 'failed') continue;
    events.push(formatEvent(applyUpdate(doc.replicas, { service: r.service, replica: r.replica, state: 'exited', detail }, now)));
  }
  if (events.length > 0) {
    try {
      // Only berth creates the log; never through a link planted in its place.
      const fd = openSync(join(runDir, 'events.jsonl'), constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      try {
        writeSync(fd, events.join(''));
      } finally {
        closeSync(fd);
      }
    } catch {
      // the log is berth's history; endpoints.json, the current state, matters more
    }
  }
  doc.updated = now.toISOString();
  doc.ended = { at: doc.updated, by: 'watchdog', reason: `berth (pid ${berthPid}) died; every service it started was stopped` };
  writeFileAtomic(file, JSON.stringify(doc, null, 2) + '\n', 0o600);
  return events.length;
}
