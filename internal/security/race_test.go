//go:build race

package security_test

// raceSlowdown is how much longer answers may take in a race-enabled build: the race detector
// slows SQLite and graphql-go down 10–50 times on a busy machine, so there the timing bounds
// only tell a stall from an answer. The figures that matter are measured without it
// (make security; docs/benchmarks.md).
const raceSlowdown = 50
