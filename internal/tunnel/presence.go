package tunnel

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/freshet-dev/freshet/internal/bus"
)

// PresenceSubject is the NATS core subject replicas announce their tunnels on. It is under
// bus.LiveSubjectRoot, so JetStream never stores it.
const PresenceSubject = bus.LiveSubjectRoot + ".tunnel.presence"

// Announcement is what one replica tells the others: which runtimes' tunnels it holds and
// where to forward requests for them. Each replaces the replica's previous one.
type Announcement struct {
	Replica  string    `json:"replica"`
	Addr     string    `json:"addr"` // base URL where the replica's HopHandler is reachable
	Runtimes []Runtime `json:"runtimes,omitempty"`
	// TTL is how long the announcement holds without renewal.
	TTL time.Duration `json:"ttl"`
	// At is when it was made (Unix milliseconds); far-off times are refused.
	At int64 `json:"at"`
	// Sync asks every other replica to announce at once (sent at start).
	Sync bool `json:"sync,omitempty"`
	// Leaving withdraws the replica's runtimes (sent at shutdown).
	Leaving bool `json:"leaving,omitempty"`
	// MAC is the hex HMAC-SHA256 of the announcement (with MAC empty) under the hop secret,
	// so that only replicas can redirect traffic.
	MAC string `json:"mac,omitempty"`
}

// Presence carries announcements between replicas. Publish delivers to every subscriber,
// the publisher's own subscription included; delivery is best effort (announcements repeat).
type Presence interface {
	Publish(ctx context.Context, a Announcement) error
	// Subscribe calls fn for each announcement until stop is called. fn must not block.
	Subscribe(fn func(Announcement)) (stop func(), err error)
}

// NATSPresence is a Presence over NATS core publish/subscribe on PresenceSubject.
type NATSPresence struct {
	nc *nats.Conn
}

var _ Presence = (*NATSPresence)(nil)

// NewNATSPresence returns a Presence over nc (the bus's connection: bus.Bus.Conn).
func NewNATSPresence(nc *nats.Conn) *NATSPresence { return &NATSPresence{nc: nc} }

// Publish sends a on PresenceSubject.
func (p *NATSPresence) Publish(_ context.Context, a Announcement) error {
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encode tunnel announcement: %w", err)
	}
	if err := p.nc.Publish(PresenceSubject, b); err != nil {
		return fmt.Errorf("publish tunnel announcement: %w", err)
	}
	return nil
}

// Subscribe calls fn for every announcement on PresenceSubject.
func (p *NATSPresence) Subscribe(fn func(Announcement)) (func(), error) {
	sub, err := p.nc.Subscribe(PresenceSubject, func(m *nats.Msg) {
		var a Announcement
		if json.Unmarshal(m.Data, &a) == nil {
			fn(a)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe to %s: %w", PresenceSubject, err)
	}
	return func() { sub.Unsubscribe() }, nil
}

func announcementMAC(secret []byte, a Announcement) string {
	a.MAC = ""
	b, _ := json.Marshal(a)
	m := hmac.New(sha256.New, secret)
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil))
}

// Run announces this replica's runtimes to the others and learns theirs, until ctx ends;
// then it withdraws them, drops every tunnel connection (Close) and returns nil. Without a
// Presence it only waits for ctx and closes.
func (s *Server) Run(ctx context.Context) error {
	started := false
	s.runOnce.Do(func() { started = true })
	if !started {
		return fmt.Errorf("tunnel server: Run called twice")
	}
	defer s.Close()
	if s.opts.Presence == nil {
		<-ctx.Done()
		return nil
	}
	stop, err := s.opts.Presence.Subscribe(s.onAnnouncement)
	if err != nil {
		return err
	}
	defer stop()
	s.announce(ctx, true, false)
	t := time.NewTicker(s.opts.PresenceInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			s.announce(cctx, false, true)
			cancel()
			return nil
		case <-t.C:
			s.peers.expire(time.Now())
			s.announce(ctx, false, false)
		case <-s.changed:
			s.announce(ctx, false, false)
		}
	}
}

func (s *Server) announce(ctx context.Context, sync, leaving bool) {
	a := Announcement{
		Replica: s.opts.ReplicaID,
		Addr:    s.opts.AdvertiseURL,
		TTL:     presenceTTLFactor * s.opts.PresenceInterval,
		At:      time.Now().UnixMilli(),
		Sync:    sync,
		Leaving: leaving,
	}
	if !leaving {
		a.Runtimes = s.reg.runtimes()
	}
	a.MAC = announcementMAC(s.opts.HopSecret, a)
	if err := s.opts.Presence.Publish(ctx, a); err != nil {
		s.log.Warn("tunnel announcement failed", logKeyErr, err)
	}
}

func (s *Server) onAnnouncement(a Announcement) {
	if a.Replica == s.opts.ReplicaID {
		return
	}
	skew := time.Since(time.UnixMilli(a.At))
	if !hmac.Equal([]byte(a.MAC), []byte(announcementMAC(s.opts.HopSecret, a))) || skew > hopMaxSkew || skew < -hopMaxSkew {
		s.log.Warn("tunnel announcement ignored: bad signature or clock", logKeyReplica, a.Replica)
		return
	}
	if a.Sync {
		s.announceChanged()
	}
	s.peers.update(a, time.Now())
}

// peerTable is what the other replicas announced.
type peerTable struct {
	mu       sync.RWMutex
	replicas map[string]*peer
	byID     map[string]peerRuntime
	byName   map[nameKey]peerRuntime
	byHost   map[string]peerRuntime
}

type peer struct {
	addr     string
	runtimes []Runtime
	expires  time.Time
}

type peerRuntime struct {
	rt Runtime
	p  *peer
}

func newPeerTable() peerTable {
	return peerTable{replicas: map[string]*peer{}}
}

func (t *peerTable) update(a Announcement, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a.Leaving {
		delete(t.replicas, a.Replica)
	} else {
		t.replicas[a.Replica] = &peer{addr: strings.TrimSuffix(a.Addr, "/"), runtimes: a.Runtimes, expires: now.Add(a.TTL)}
	}
	t.reindex()
}

// drop forgets the replica at addr, which refused a connection (it died without withdrawing
// its announcement); it is learned again from its next announcement if it is back.
func (t *peerTable) drop(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.replicas)
	for id, p := range t.replicas {
		if p.addr == addr {
			delete(t.replicas, id)
		}
	}
	if len(t.replicas) != n {
		t.reindex()
	}
}

func (t *peerTable) expire(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.replicas)
	for id, p := range t.replicas {
		if !now.Before(p.expires) {
			delete(t.replicas, id)
		}
	}
	if len(t.replicas) != n {
		t.reindex()
	}
}

// reindex rebuilds the lookups; when two replicas claim a runtime (it just moved), the
// fresher announcement wins.
func (t *peerTable) reindex() {
	t.byID = map[string]peerRuntime{}
	t.byName = map[nameKey]peerRuntime{}
	t.byHost = map[string]peerRuntime{}
	put := func(m map[string]peerRuntime, k string, pr peerRuntime) {
		if old, ok := m[k]; !ok || pr.p.expires.After(old.p.expires) {
			m[k] = pr
		}
	}
	for _, p := range t.replicas {
		for _, rt := range p.runtimes {
			pr := peerRuntime{rt, p}
			put(t.byID, rt.ID, pr)
			if old, ok := t.byName[nameKey{rt.AccountID, rt.Name}]; !ok || p.expires.After(old.p.expires) {
				t.byName[nameKey{rt.AccountID, rt.Name}] = pr
			}
			if l := rt.HostLabel(); l != "" {
				put(t.byHost, l, pr)
			}
		}
	}
}

func (t *peerTable) get(pr peerRuntime, ok bool, now time.Time) (Runtime, string, bool) {
	if !ok || !now.Before(pr.p.expires) {
		return Runtime{}, "", false
	}
	return pr.rt, pr.p.addr, true
}

func (t *peerTable) lookupID(id string, now time.Time) (Runtime, string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	pr, ok := t.byID[id]
	return t.get(pr, ok, now)
}

func (t *peerTable) lookupName(account, name string, now time.Time) (Runtime, string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	pr, ok := t.byName[nameKey{account, name}]
	return t.get(pr, ok, now)
}

func (t *peerTable) lookupHost(label string, now time.Time) (Runtime, string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	pr, ok := t.byHost[label]
	return t.get(pr, ok, now)
}
