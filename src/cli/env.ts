/** /proc root: BERTH_PROC_ROOT points berth at a fixture tree (tests, offline audits of a captured host). */
export function procRoot(): string {
  return process.env.BERTH_PROC_ROOT || '/proc';
}
