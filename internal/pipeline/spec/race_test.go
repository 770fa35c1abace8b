//go:build race

package spec

// raceSlowdown scales time limits: the race detector makes code several times slower.
const raceSlowdown = 10
