package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Subnet slots. Rootful Podman instances share the host's network namespace and netavark's
// IPAM database (/run/containers/networks), but each picks subnets for the networks it
// creates from its own configuration and from the interfaces that exist at that moment — a
// network's bridge only exists while a container uses it. Two engines running at once (two
// test binaries) could therefore give different networks the same subnet. Each engine
// instance claims a slot machine-wide instead and creates its networks only from that slot's
// /16: 10.(128+slot).0.0/16, in /24s.
const (
	slotCount       = 64
	slotFirstOctet2 = 128
	// slotClaimGrace is how long a claim whose engine has not started yet stays valid.
	slotClaimGrace = 2 * time.Minute
)

// slotDir holds one file per claimed slot; /run is a tmpfs, so claims end with a reboot.
var slotDir = "/run/freshet/engine-slots"

// slotClaim is the content of a slot file.
type slotClaim struct {
	StateDir string    `json:"stateDir"`
	PID      int       `json:"pid,omitempty"` // the engine's podman service, once started
	Start    uint64    `json:"startTime,omitempty"`
	Claimed  time.Time `json:"claimed"`
}

// slotPool is the address pool of a slot.
func slotPool(slot int) *net.IPNet {
	return &net.IPNet{IP: net.IPv4(10, byte(slotFirstOctet2+slot), 0, 0).To4(), Mask: net.CIDRMask(16, 32)}
}

func slotPath(slot int) string { return filepath.Join(slotDir, strconv.Itoa(slot)) }

// claimSlot returns the slot of the engine whose state directory is stateDir: the one it
// already holds, else the first free one whose pool no host interface uses.
func claimSlot(ctx context.Context, stateDir string) (int, error) {
	unlock, err := lockFile(ctx, filepath.Join(slotDir, ".lock"))
	if err != nil {
		return 0, err
	}
	defer unlock()
	used := hostNetworks()
	free := -1
	for s := range slotCount {
		var c slotClaim
		err := readJSON(slotPath(s), &c)
		if err == nil && c.StateDir == stateDir {
			return s, writeJSON(slotPath(s), slotClaim{StateDir: stateDir, Claimed: time.Now()}, 0o644)
		}
		if free >= 0 || overlapsAny(slotPool(s), used) {
			continue
		}
		if _, statErr := os.Stat(slotPath(s)); errors.Is(statErr, os.ErrNotExist) || (err == nil && claimStale(c)) {
			free = s
		}
	}
	if free < 0 {
		return 0, fmt.Errorf("all %d engine subnet slots in %s are taken by running engines; stop one (ctrenv engine down)", slotCount, slotDir)
	}
	return free, writeJSON(slotPath(free), slotClaim{StateDir: stateDir, Claimed: time.Now()}, 0o644)
}

// claimStale tells whether a claim no longer holds: its engine exited, or it never started
// one within the grace period.
func claimStale(c slotClaim) bool {
	if c.PID > 0 {
		return !running(pidFile{PID: c.PID, StartTime: c.Start})
	}
	return time.Since(c.Claimed) > slotClaimGrace
}

// recordSlotOwner writes the engine's process into its claim.
func recordSlotOwner(slot int, stateDir string, p pidFile) error {
	return writeJSON(slotPath(slot), slotClaim{StateDir: stateDir, PID: p.PID, Start: p.StartTime, Claimed: time.Now()}, 0o644)
}

// releaseSlot removes the claim if it is stateDir's.
func releaseSlot(slot int, stateDir string) {
	var c slotClaim
	if readJSON(slotPath(slot), &c) == nil && c.StateDir == stateDir {
		_ = os.Remove(slotPath(slot))
	}
}

// hostNetworks are the IPv4 networks of the host's interfaces now.
func hostNetworks() []*net.IPNet {
	addrs, _ := net.InterfaceAddrs()
	var out []*net.IPNet
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			out = append(out, n)
		}
	}
	return out
}

func overlapsAny(n *net.IPNet, others []*net.IPNet) bool {
	for _, o := range others {
		if n.Contains(o.IP) || o.Contains(n.IP) {
			return true
		}
	}
	return false
}
