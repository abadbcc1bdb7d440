/*
 * `berth up`'s stack, in four folders whose arrows point one way:
 *   multi-node/  a stack over a Slurm allocation's nodes   → run/, record/, file/
 *   run/         one running stack on this host            → record/, file/
 *   record/      what a run leaves and shows               → file/
 *   file/        the stack file, read and checked
 * Each folder's index.ts says what it owns and may import. This is the library's face.
 */
export * from './file/index.js';
export * from './record/index.js';
export * from './run/index.js';
