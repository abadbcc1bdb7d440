import assert from 'node:assert/strict';
import { BerthError, EXIT } from '../../src/errors.js';

/**
 * Runs `read`, which must refuse `file` with one BerthError(DATAERR) whose message lines are
 * its details.errors; returns those lines (the layout parser and the stack loader report so).
 */
export function dataErrors(file: string, read: () => unknown): string[] {
  try {
    read();
  } catch (e) {
    assert.ok(e instanceof BerthError, `expected BerthError, got ${String(e)}`);
    assert.equal(e.exitCode, EXIT.DATAERR);
    const errors = e.details?.errors as string[];
    assert.deepEqual(e.message.split('\n'), errors);
    assert.equal(e.details?.file, file);
    return errors;
  }
  assert.fail(`${file} was read without error`);
}
