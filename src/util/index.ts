/*
 * util/: small helpers every folder uses and none owns: durations, text and bytes, YAML
 * source positions, atomic writes and private directories (no other user's link on the
 * way), redaction of secrets, the current user. Nothing here knows of ports or services.
 * May import: src/errors. Imported directly by file (this index only says what it holds).
 */
export {};
