package version

import (
	"fmt"
	"strconv"
	"strings"
)

// Version skew policy (docs/operations.md "Upgrades"): runtimes and runners may lag the control
// plane by one minor version of the same major version. Upgrade the control plane first, then
// the agents.
const (
	// SkewCurrent: the agent is at the control plane's minor version (any patch).
	SkewCurrent = "current"
	// SkewOutdated: the agent lags by one minor version; it works, and should be upgraded.
	SkewOutdated = "outdated"
	// SkewUnsupported: the agent lags by more, is of another major version, or is newer than
	// the control plane; it is refused.
	SkewUnsupported = "unsupported"
	// SkewUnknown: one of the versions is not a release version (vMAJOR.MINOR.PATCH), as in
	// development builds; nothing is checked.
	SkewUnknown = "unknown"
)

// Skew is how an agent's version stands to the control plane's.
type Skew struct {
	Status  string // SkewCurrent, SkewOutdated, SkewUnsupported or SkewUnknown
	Agent   string // the agent's version
	Server  string // the control plane's version
	Message string // what to do, for SkewOutdated and SkewUnsupported
}

// release is a parsed vMAJOR.MINOR.PATCH (a pre-release or build suffix is ignored).
type release struct{ major, minor, patch int }

func parseRelease(v string) (release, bool) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return release{}, false
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 || p == "" {
			return release{}, false
		}
		n[i] = x
	}
	return release{n[0], n[1], n[2]}, true
}

// CheckSkew says how agent version agent (a runtime's or a runner's, kind names which) stands to
// control plane version server under the skew policy.
func CheckSkew(kind, agent, server string) Skew {
	s := Skew{Status: SkewUnknown, Agent: agent, Server: server}
	a, okA := parseRelease(agent)
	c, okC := parseRelease(server)
	if !okA || !okC {
		return s
	}
	upgrade := fmt.Sprintf("upgrade the %s to %s", kind, server)
	switch {
	case a.major != c.major:
		s.Status = SkewUnsupported
		s.Message = fmt.Sprintf("%s %s is of another major version than the control plane (%s): %s", kind, agent, server, upgrade)
	case a.minor > c.minor:
		s.Status = SkewUnsupported
		s.Message = fmt.Sprintf("%s %s is newer than the control plane (%s): upgrade the control plane first, or run a %s of %d.%d", kind, agent, server, kind, c.major, c.minor)
	case a.minor == c.minor:
		s.Status = SkewCurrent
	case a.minor == c.minor-1:
		s.Status = SkewOutdated
		s.Message = fmt.Sprintf("%s %s lags the control plane (%s) by one minor version, which is still supported: %s", kind, agent, server, upgrade)
	default:
		s.Status = SkewUnsupported
		s.Message = fmt.Sprintf("%s %s lags the control plane (%s) by more than one minor version, which is not supported: %s", kind, agent, server, upgrade)
	}
	return s
}
