import { isAlias, isMap, isScalar, isSeq } from 'yaml';
import type { Document, Node, Pair, YAMLMap } from 'yaml';
import { kindOf } from './yaml-values.js';

/**
 * Merge keys (`<<: *common`) expanded in the node tree, so a merged pair keeps the line it was written
 * on. Written keys win over merged ones, earlier sources over later (YAML 1.1); a self-merge is refused.
 */
export class MergeExpander {
  private readonly done = new Set<Node>();
  private readonly active = new Set<YAMLMap>();

  constructor(
    private readonly doc: Document.Parsed,
    private readonly add: (line: number, text: string) => void,
    private readonly lineOf: (n: Node | null | undefined) => number,
  ) {}

  node(n: Node | null | undefined): void {
    if (!n || isAlias(n) || this.done.has(n)) return;
    if (isMap(n)) this.map(n);
    else if (isSeq(n)) {
      this.done.add(n);
      for (const it of n.items) this.node(it as Node);
    } else this.done.add(n);
  }

  private map(map: YAMLMap): void {
    if (this.done.has(map)) return;
    this.active.add(map);
    const isMerge = (p: Pair<unknown, unknown>) => isScalar(p.key) && typeof p.key.value === 'symbol';
    if (map.items.some(isMerge)) {
      const keyOf = (p: Pair<unknown, unknown>) => (isScalar(p.key) && p.key.value !== null ? String(p.key.value) : undefined);
      const taken = new Set(map.items.filter((p) => !isMerge(p)).map(keyOf).filter((k) => k !== undefined));
      const items: Pair<unknown, unknown>[] = [];
      for (const p of map.items) {
        if (!isMerge(p)) {
          items.push(p);
          continue;
        }
        for (const src of this.sources(p)) {
          for (const q of src.items) {
            const k = keyOf(q);
            if (k !== undefined && taken.has(k)) continue;
            if (k !== undefined) taken.add(k);
            items.push(q);
          }
        }
      }
      map.items = items;
    }
    this.active.delete(map);
    this.done.add(map);
    for (const p of map.items) {
      this.node(p.key as Node | null);
      this.node(p.value as Node | null);
    }
  }

  /** The mappings a `<<` pair merges, each already expanded; problems reported at the `<<`. */
  private sources(p: Pair<unknown, unknown>): YAMLMap[] {
    const line = this.lineOf(p.key as Node);
    const value = p.value as Node | null;
    const listed = value && isSeq(value) ? (value.items as Node[]) : [value];
    const out: YAMLMap[] = [];
    for (const item of listed) {
      let target: Node | null | undefined = item;
      if (isAlias(item)) {
        target = item.resolve(this.doc) as Node | undefined;
        if (target === undefined) {
          this.add(line, `"<<": alias *${item.source} has no matching &${item.source} anchor`);
          continue;
        }
      }
      if (!target || !isMap(target)) {
        this.add(line, `"<<" merges mappings: write "<<: *NAME" or "<<: [*A, *B]" naming mappings anchored with &NAME, found ${kindOf(target)}`);
        continue;
      }
      if (this.active.has(target)) {
        const name = isAlias(item) ? ` *${item.source}` : '';
        this.add(line, `"<<": the mapping${name} merges itself (it contains this "<<"); merge it from outside instead`);
        continue;
      }
      this.map(target);
      out.push(target);
    }
    return out;
  }
}
