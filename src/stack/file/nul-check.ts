import { BerthError, EXIT } from '../../errors.js';
import { nulProblems } from '../../util/nul-bytes.js';
import type { StackSpec } from './spec.js';

/**
 * A stack's strings that become a program's argv or environment (command, env, ready cmd,
 * cwd, host) must hold no NUL byte ("\0" in a YAML double-quoted string): refused at load
 * time (65) naming the service and field, not at spawn as a crash of the replica.
 */
export function checkNulBytes(spec: StackSpec): void {
  const errors: string[] = [];
  for (const s of spec.services) {
    const at = `services.${s.name}`;
    const fields: [string, string | undefined][] = [
      ...s.command.map((w, i): [string, string] => [`${at}.command word ${i + 1}`, w]),
      ...Object.entries(s.env).flatMap(([k, v]): [string, string][] => [
        [`${at}.env name ${JSON.stringify(k.replace(/\0/g, '\\0'))}`, k],
        [`${at}.env.${k.replace(/\0/g, '\\0')}`, v],
      ]),
      [`${at}.cwd`, s.cwd],
      [`${at}.host`, s.host],
      [`${at}.ready`, s.ready?.kind === 'cmd' ? s.ready.command : s.ready?.kind === 'http' ? s.ready.url : undefined],
    ];
    for (const p of nulProblems(fields)) errors.push(`${spec.file}:${s.line}: ${p}`);
  }
  if (errors.length > 0) throw new BerthError(EXIT.DATAERR, errors.join('\n'), { file: spec.file, errors });
}
