import { BerthError } from '../errors.js';
import { formatRange } from '../host/intervals.js';
import type { PortRange } from '../host/host-map.js';
import type { Finding, Layout } from '../layout/layout-model.js';
import { instanceCount, instanceWindow } from '../layout/windows.js';
import type { Gpu, GpuSource } from './gpus.js';
import { compressHostlist } from './hostlist.js';
import { resolveInstance, type ResolvedInstance } from './instance.js';
import { readSlurmEnv, type SlurmEnv } from './env.js';

/*
 * What `berth doctor` says inside a Slurm job: the job, its GPUs, the instances
 * `--instance auto|gpu` would pick and the windows of the layout's bands this job takes.
 * Pure apart from reading the given environment.
 */

export interface JobWindow {
  band: string;
  /** "gpu" (the window of a GPU: --instance gpu, replicas: gpus) or "auto" (--instance auto). */
  by: 'gpu' | 'auto';
  instance: number;
  /** The GPU's node-wide index, for by = "gpu". */
  gpu?: number;
  /** Undefined when the instance lies outside the band (then there is an error finding). */
  range?: PortRange;
}

export interface SlurmJobSummary {
  jobId: string;
  stepId?: string;
  nodeName?: string;
  /** The job's nodes, compressed ("n[1-3]"). */
  nodeList: string;
  nodeCount: number;
  localId?: number;
  procId?: number;
  gpuSource?: GpuSource;
  gpus: Gpu[];
  instanceAuto?: ResolvedInstance;
  instanceGpu?: ResolvedInstance;
  resvPorts?: PortRange[];
  windows: JobWindow[];
}

export interface JobReport {
  /** Undefined outside a Slurm job, or when its environment is invalid (then a finding says why). */
  summary?: SlurmJobSummary;
  findings: Finding[];
}

function windowsOf(layout: Layout, slurm: SlurmEnv, auto: ResolvedInstance | undefined, findings: Finding[]): JobWindow[] {
  const out: JobWindow[] = [];
  for (const band of layout.bands) {
    if (band.window === undefined) continue; // one instance, shared by design: nothing job-specific
    const fits = instanceCount(band);
    const want: { by: 'gpu' | 'auto'; instance: number; gpu?: number }[] = (slurm.gpus?.gpus ?? []).map((g) => ({
      by: 'gpu',
      instance: g.index,
      gpu: g.index,
    }));
    if (auto) want.push({ by: 'auto', instance: auto.instance });
    for (const w of want) {
      const jw: JobWindow = { band: band.name, ...w };
      if (w.instance < fits) jw.range = instanceWindow(band, w.instance);
      else {
        const what = w.by === 'gpu' ? `GPU ${w.gpu} of this job` : `--instance auto (${auto!.from}=${w.instance})`;
        findings.push({
          severity: 'error',
          code: 'slurm-instance-outside-band',
          band: band.name,
          message: `band "${band.name}" (${formatRange(band)}, window ${band.window}) fits instances 0-${fits - 1}, but ${what} takes instance ` +
            `${w.instance}: its services cannot start here; widen the band to at least ` +
              `${band.lo}-${band.lo + (w.instance + 1) * band.window - 1} or use a smaller window`,
        });
      }
      out.push(jw);
    }
  }
  return out;
}

/** The job summary and its findings for `layout`, from `env`; undefined summary outside Slurm. */
export function slurmJobReport(layout: Layout | undefined, env: NodeJS.ProcessEnv = process.env): JobReport {
  const findings: Finding[] = [];
  let slurm: SlurmEnv | undefined;
  try {
    slurm = readSlurmEnv(env);
  } catch (e) {
    if (!(e instanceof BerthError)) throw e;
    findings.push({
      severity: 'error',
      code: 'slurm-env-invalid',
      message: `${e.message}; --instance auto|gpu, --source resv and replicas: gpus cannot work until it is fixed`,
    });
    return { findings };
  }
  if (!slurm) return { findings };
  const summary: SlurmJobSummary = {
    jobId: slurm.jobId,
    nodeList: compressHostlist(slurm.nodeList),
    nodeCount: slurm.nodeList.length,
    gpus: slurm.gpus?.gpus ?? [],
    windows: [],
  };
  for (const k of ['stepId', 'nodeName', 'localId', 'procId'] as const) if (slurm[k] !== undefined) Object.assign(summary, { [k]: slurm[k] });
  if (slurm.gpus) summary.gpuSource = slurm.gpus.source;
  if (slurm.resvPorts) summary.resvPorts = slurm.resvPorts;
  try {
    summary.instanceAuto = resolveInstance('auto', env);
  } catch (e) {
    if (!(e instanceof BerthError)) throw e;
    // No BERTH_INSTANCE / SLURM_LOCALID: `auto` is simply unavailable here; a bad value is a finding.
    if (e.details?.variable !== undefined) findings.push({ severity: 'error', code: 'slurm-env-invalid', message: e.message });
  }
  if (summary.gpus.length > 0) summary.instanceGpu = resolveInstance('gpu', env);
  if (layout) summary.windows = windowsOf(layout, slurm, summary.instanceAuto, findings);
  return { summary, findings };
}

/** The summary as the text section doctor prints after its report. */
export function renderJobSummary(s: SlurmJobSummary): string {
  const lines: string[] = [];
  const step = s.stepId === undefined ? ' (batch script)' : ` step ${s.stepId}`;
  const node = s.nodeName === undefined ? '' : ` on node ${s.nodeName}`;
  lines.push(`Slurm job ${s.jobId}${step}${node}; nodes ${s.nodeList || '?'} (${s.nodeCount})`);
  if (s.gpus.length > 0) {
    const list = s.gpus.map((g) => (String(g.index) === g.visible ? String(g.index) : `${g.index} (CUDA_VISIBLE_DEVICES ${g.visible})`)).join(', ');
    lines.push(`  GPUs (${s.gpuSource}): ${list}`);
  } else lines.push('  GPUs: none (no SLURM_STEP_GPUS, SLURM_JOB_GPUS or CUDA_VISIBLE_DEVICES)');
  lines.push(`  --instance gpu:  ${s.instanceGpu ? `${s.instanceGpu.instance} (${s.instanceGpu.from})` : 'unavailable (no GPU)'}`);
  lines.push(
    `  --instance auto: ${s.instanceAuto ? `${s.instanceAuto.instance} (${s.instanceAuto.from})` : 'unavailable (no BERTH_INSTANCE or SLURM_LOCALID)'}`,
  );
  lines.push(`  --source resv:   ${s.resvPorts ? s.resvPorts.map(formatRange).join(',') : 'unavailable (not in an srun --resv-ports step)'}`);
  if (s.windows.length > 0) {
    lines.push('  windows of this job:');
    const bands = [...new Set(s.windows.map((w) => w.band))];
    const width = Math.max(...bands.map((b) => b.length));
    for (const b of bands) {
      const parts = s.windows
        .filter((w) => w.band === b)
        .map((w) => `${w.by === 'gpu' ? `gpu ${w.gpu}` : 'auto'}: ${w.range ? formatRange(w.range) : 'outside the band'}`);
      lines.push(`    ${b.padEnd(width)}  ${parts.join('   ')}`);
    }
  }
  return lines.join('\n') + '\n';
}
