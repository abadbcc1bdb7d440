import { describeTemplateError, parseTemplate, type ParseOptions, type TemplatePart } from './placeholders.js';
import type { YamlReader } from './ports-key.js';

/** A text's placeholders, each broken one reported where it stands. */
export function templateParts(text: string, where: string, line: number, label: string, reader: YamlReader, opts?: ParseOptions): TemplatePart[] {
  const { parts, errors } = parseTemplate(text, opts);
  for (const e of errors) reader.add(line, `${label}: ${where} ${describeTemplateError(e)}`);
  return parts;
}
