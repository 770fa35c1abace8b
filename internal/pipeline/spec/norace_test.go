//go:build !race

package spec

const raceSlowdown = 1
