/**
 * Running the arm64 single executable on this x86-64 machine: Debian's qemu-user-static, the
 * arm64 C libraries (libc6-arm64-cross, libstdc++6-arm64-cross) as its sysroot, and
 * binfmt_misc, so that the kernel runs any aarch64 binary under qemu, also the ones berth
 * starts of itself (its watchdog: process.execPath) as a real arm64 node would. .ci/run
 * installs the packages and registers the format; in CI a missing piece is a failure.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { TestContext } from 'node:test';

export const ARM64_SYSROOT = '/usr/aarch64-linux-gnu';
const BINFMT = '/proc/sys/fs/binfmt_misc/qemu-aarch64';

/** What a run of an aarch64 binary needs in its environment: where qemu finds the target's libraries. */
export const EMULATION_ENV: NodeJS.ProcessEnv = process.arch === 'arm64' ? {} : { QEMU_LD_PREFIX: ARM64_SYSROOT };

/** Why aarch64 binaries cannot run here, or undefined when they can. */
export function emulationUnavailable(): string | undefined {
  if (process.arch === 'arm64') return undefined;
  if (!existsSync('/usr/bin/qemu-aarch64-static')) return 'qemu-aarch64-static is missing (apt-get install qemu-user-static)';
  if (!existsSync(`${ARM64_SYSROOT}/lib/ld-linux-aarch64.so.1`) || !existsSync(`${ARM64_SYSROOT}/lib/libstdc++.so.6`)) {
    return `no arm64 C libraries in ${ARM64_SYSROOT} (apt-get install libc6-arm64-cross libstdc++6-arm64-cross libgcc-s1-arm64-cross)`;
  }
  let state = '';
  try {
    state = readFileSync(BINFMT, 'utf8');
  } catch {
    return `aarch64 binaries are not registered with binfmt_misc (${BINFMT} is missing; as root: mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc, then cat /usr/lib/binfmt.d/qemu-aarch64.conf > /proc/sys/fs/binfmt_misc/register, as .ci/run does)`;
  }
  if (!/^enabled$/m.test(state)) return `${BINFMT} is disabled (echo 1 > ${BINFMT})`;
  return undefined;
}

/** True when the test can run; outside CI skips loudly when it cannot, in CI throws. */
export function requireEmulation(t: TestContext): boolean {
  const why = emulationUnavailable();
  if (why === undefined) return true;
  if (process.env.CI) throw new Error(`arm64 emulation test cannot run in CI: ${why}`);
  process.stderr.write(`\n!!! SKIPPING arm64 emulation test "${t.name}": ${why}. In CI this is a failure.\n\n`);
  t.skip(`needs qemu-user for aarch64: ${why}`);
  return false;
}
