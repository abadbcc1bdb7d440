/**
 * "contains a NUL byte (\0) at character 3 …" for `value`, or undefined. argv and env entries are C
 * strings, and Node refuses a NUL at spawn (a crash of the service): refused where the text enters.
 */
export function nulProblem(field: string, value: string): string | undefined {
  const at = value.indexOf('\0');
  if (at < 0) return undefined;
  return `${field} contains a NUL byte (\\0) at character ${at + 1}; a program's arguments and environment cannot hold one: remove it`;
}

/** Every problem of `fields` ([field name, value] pairs; undefined values skipped). */
export function nulProblems(fields: Iterable<readonly [string, string | undefined]>): string[] {
  const out: string[] = [];
  for (const [field, value] of fields) {
    if (value === undefined) continue;
    const p = nulProblem(field, value);
    if (p !== undefined) out.push(p);
  }
  return out;
}
