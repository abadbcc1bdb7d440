import { accessSync, constants, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { isMap } from 'yaml';
import type { Node } from 'yaml';
import { PORT_NAME_RE } from '../../allocate/port-set.js';
import { isNullish, kindOf, scalarText } from '../../util/yaml-values.js';
import type { YamlReader } from './ports-key.js';
import type { ConfigTemplate } from './spec.js';
import { renderedName } from './templates.js';

/*
 * A service's `templates:` key: config files berth renders into the run folder before each
 * start of each replica (mustache; templates.ts), reached from the command as {templates.NAME}:
 *   templates:
 *     conf: nginx.conf.mustache     # relative to the stack file
 *   command: [nginx, -c, "{templates.conf}", -g, "daemon off;"]
 * Reads the names and files; the tags are checked against the context in stack-checks.ts.
 */

const EXAMPLE = 'templates: { conf: nginx.conf.mustache }';

/** The templates, or undefined when the key is broken (every problem reported). */
export function readTemplatesKey(v: Node | null | undefined, line: number, label: string, baseDir: string, y: YamlReader): ConfigTemplate[] | undefined {
  if (isNullish(v) || !v || !isMap(v) || v.items.length === 0) {
    y.add(
      y.lineOf(v, line),
      `${label}: templates must be a mapping of names to template files, e.g. ${EXAMPLE}, found ${v && isMap(v) ? 'an empty mapping' : kindOf(v)}`,
    );
    return undefined;
  }
  const out: ConfigTemplate[] = [];
  const rendered = new Map<string, string>();
  let broken = false;
  for (const p of v.items) {
    const at = y.lineOf(p.key as Node, line);
    const name = y.keyName(p);
    if (name === undefined || !PORT_NAME_RE.test(name)) {
      y.add(
        at,
        `${label}: template name ${name === undefined ? kindOf(p.key as Node) : JSON.stringify(name)} is not a name (letters, digits, "_" and "-", starting ` +
          `with a letter)`,
      );
      broken = true;
      continue;
    }
    const fv = y.deref(p.value as Node | null, at, label);
    const text = scalarText(fv)?.trim();
    if (!text) {
      y.add(y.lineOf(fv, at), `${label}: template "${name}" must name a file, e.g. ${EXAMPLE}, found ${kindOf(fv)}`);
      broken = true;
      continue;
    }
    const file = isAbsolute(text) ? text : resolve(baseDir, text);
    const problem = unreadable(file);
    if (problem !== undefined) {
      y.add(y.lineOf(fv, at), `${label}: template "${name}": ${file} ${problem}`);
      broken = true;
      continue;
    }
    // Every template of a replica is rendered into one folder under its own file name.
    const outName = renderedName(file);
    const other = rendered.get(outName);
    if (other !== undefined) {
      y.add(y.lineOf(fv, at), `${label}: templates "${other}" and "${name}" would both be rendered as ${outName}; rename one of the files`);
      broken = true;
      continue;
    }
    rendered.set(outName, name);
    out.push({ name, file, line: y.lineOf(fv, at) });
  }
  return broken ? undefined : out;
}

function unreadable(file: string): string | undefined {
  try {
    if (!statSync(file).isFile()) return 'is not a regular file';
    accessSync(file, constants.R_OK);
    return undefined;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? 'does not exist' : code === 'EACCES' ? 'is not readable' : `cannot be read (${code ?? String(e)})`;
  }
}
