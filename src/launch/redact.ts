// The redaction rules live in util/redact.ts (every layer redacts: reports, messages, the
// allocator's descriptions of other users' processes); this keeps launch's imports as they were.
export * from '../util/redact.js';
