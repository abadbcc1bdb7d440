/*
 * A NUL byte cannot be passed to a program: argv words and environment entries are C strings,
 * so the kernel would cut them there and Node refuses them at spawn (ERR_INVALID_ARG_VALUE,
 * which would surface as a crash of the service). A YAML "\0" escape or a library caller can
 * put one in; it is refused where the text enters berth, naming the field.
 */

/** "contains a NUL byte (\0) at character 3 …" for `value`, or undefined when it has none. */
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
