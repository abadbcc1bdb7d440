/** srun's report of agents that ended (src/stack/multi-node/task-ended.ts), on the lines srun 22.05 writes. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tasksEnded } from '../src/stack/multi-node/task-ended.js';

test('srun task reports: one task, several as a hostlist; anything else is no report', () => {
  assert.deepEqual(tasksEnded('srun: error: n2: task 1: Killed'), { nodes: ['n2'], how: 'Killed' });
  assert.deepEqual(tasksEnded('srun: error: n[2-3]: tasks 1-2: Exited with exit code 70\n'), { nodes: ['n2', 'n3'], how: 'Exited with exit code 70' });
  assert.deepEqual(tasksEnded('srun: error: gpu-a01,gpu-b02: tasks 0,3: Segmentation fault (core dumped)'), { nodes: ['gpu-a01', 'gpu-b02'], how: 'Segmentation fault (core dumped)' });
  for (const line of ['srun: Force Terminated StepId=2.0', '[n2] srun: error: n2: task 1: Killed', 'srun: error: Node failure on n2', 'srun: error: n[2: task 1: Killed', '']) {
    assert.equal(tasksEnded(line), undefined, line);
  }
});
