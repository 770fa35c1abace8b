// Package security is Freshet's attack suite. Each test performs an attack — one that once
// worked, or one every new route and feature must withstand — against real parts: a control
// plane on SQLite or PostgreSQL, real runners and runtimes, real git. Every attack records what
// it tried in one table that `make security` prints (also run by `make test`): the attack's
// category, attempts, successes (which must be 0) and the worst latency seen under the abusive
// input. docs/security.md is the threat model the attacks come from.
//
// The package has no code of its own besides this comment; the attacks are its tests.
package security
