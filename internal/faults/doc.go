// Package faults is Freshet's fault suite: tests that start the built `freshet` binary as real
// processes (`freshet server`, `freshet up`, `freshet runner`, `freshet build logs -f`), break
// them the way an operator's bad day does — SIGKILL, SIGTERM, a control plane gone for longer
// than a lease, a network that goes silent — and count what a user would lose: log lines,
// events, builds stuck in the queue, steps run twice, seconds to exit or to recover.
//
// The package has no code of its own outside its tests. TestMain builds cmd/freshet once. The
// control plane runs on PostgreSQL when FRESHET_TEST_POSTGRES is set (a fresh schema per test)
// and on SQLite otherwise. Every test is bounded in count and time (under a minute each) and
// asserts counts, never durations, so it holds on a busy machine; durations it measures are
// reported, not asserted, except where the guarantee is itself a bound (then with a generous
// margin).
//
// Each test logs machine-readable rows "FAULT|item|what|value" (item: the reliability issue's
// item number; value: a count or seconds). `make faults` runs the suite and prints the rows as
// a table; docs/benchmarks.md keeps the numbers before and after each fix. Tests for the control
// plane's own faults (log appends, the outbox relay, dispatch sessions, build numbers) belong
// beside these, with the same helpers (harness_test.go).
//
// TestChaos (`make chaos`, chaos_test.go) runs on the same harness: three `freshet server`
// replicas, a NATS cluster of nats-server processes, runners and a tunnel runtime under steady
// load, through one fault after another, with a row "CHAOSROW|fault|counts…" per fault. It runs
// only when `make chaos` built nats-server (FRESHET_CHAOS_NATS_SERVER), on PostgreSQL.
package faults
