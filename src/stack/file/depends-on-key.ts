import { isMap, isScalar, isSeq } from 'yaml';
import type { Node } from 'yaml';
import { isNullish, kindOf, scalarText } from '../../util/yaml-values.js';
import type { Draft } from './draft.js';
import type { YamlReader } from './ports-key.js';
import type { DependCondition } from './spec.js';

/*
 * A service's `depends_on:`, a mapping { SERVICE: started|ready|completed } or a list of
 * services (= ready). Whether those services exist is checked across services (stack-checks.ts).
 */

const CONDITIONS: readonly DependCondition[] = ['started', 'ready', 'completed'];

/** The dependencies into the draft's spec; each problem reported where it stands. */
export function readDependsOnKey(value: Node | null | undefined, line: number, label: string, draft: Draft, reader: YamlReader): void {
  const seen = new Map<string, number>();
  const push = (service: string, condition: DependCondition, at: number) => {
    const first = seen.get(service);
    if (first !== undefined) {
      reader.add(at, `${label}: depends_on lists "${service}" twice (first at line ${first})`);
      return;
    }
    seen.set(service, at);
    draft.spec.dependsOn.push({ service, condition, line: at });
  };
  if (isNullish(value)) return;
  if (value && isSeq(value)) {
    for (const item of value.items) {
      const it = reader.deref(item as Node, line, label);
      const name = it && isScalar(it) && typeof it.value === 'string' ? it.value : undefined;
      const at = reader.lineOf(it, line);
      if (name === undefined) reader.add(at, `${label}: depends_on entries must be service names, found ${kindOf(it)}`);
      else push(name, 'ready', at);
    }
    return;
  }
  if (value && isMap(value)) {
    for (const p of value.items) {
      const at = reader.lineOf(p.key as Node, line);
      const name = reader.keyName(p);
      if (name === undefined) {
        reader.add(at, `${label}: depends_on keys must be service names, found ${kindOf(p.key as Node)}`);
        continue;
      }
      const conditionNode = reader.deref(p.value as Node | null, at, label);
      const condition = scalarText(conditionNode);
      const known = condition !== undefined && (CONDITIONS as readonly string[]).includes(condition);
      if (!known) {
        reader.add(
          reader.lineOf(conditionNode, at),
          `${label}: depends_on "${name}": the condition must be started, ready or completed, found ${kindOf(conditionNode)}`,
        );
      }
      // An unknown condition is kept as ready (the stack is refused anyway), so its placeholders are not also reported as undeclared.
      push(name, known ? (condition as DependCondition) : 'ready', at);
    }
    return;
  }
  reader.add(
    reader.lineOf(value, line),
    `${label}: depends_on must be a mapping { SERVICE: started|ready|completed } or a list of services (= ready), found ${kindOf(value)}`,
  );
}
