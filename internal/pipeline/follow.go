package pipeline

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/freshet-dev/freshet/internal/rbac"
)

// followRead is how much stored log one read takes.
const followRead = 1 << 20

// Follow sends a build's log from offset to emit — what is stored, then live chunks as the
// runner uploads them — until the build has ended and its whole log was sent; then it calls
// end with the final status. It subscribes to live chunks before reading what is stored, and
// sends every byte once and in order, whichever replica stored it.
func (d *Dispatcher) Follow(ctx context.Context, p rbac.Principal, id string, offset int64, emit func(offset int64, data []byte) error, end func(status string) error, ping func() error) error {
	b, err := d.svc.GetBuild(ctx, p, id) // authorizes and scopes to p's account
	if err != nil {
		return err
	}
	wake := make(chan struct{}, 1)
	poke := func(*nats.Msg) {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	if d.nc != nil {
		for _, subj := range []string{subjectLogs + b.ID, subjectBuilds + b.ID} {
			sub, err := d.nc.Subscribe(subj, poke)
			if err != nil {
				return err
			}
			defer sub.Unsubscribe()
		}
	}
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	poll := time.NewTicker(2 * time.Second) // a safety net should a live message be missed
	defer poll.Stop()
	for {
		// Drain what is stored from offset.
		for {
			data, err := d.db.ReadLog(ctx, b.ID, offset, followRead)
			if err != nil {
				return err
			}
			if len(data) == 0 {
				break
			}
			if err := emit(offset, data); err != nil {
				return err
			}
			offset += int64(len(data))
		}
		cur, err := d.db.GetBuild(ctx, b.AccountID, b.ID)
		if err != nil {
			return err
		}
		if !Active(cur.Status) && offset >= cur.LogSize {
			return end(cur.Status)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.done: // shutting down: the follower resumes from its offset elsewhere
			return nil
		case <-wake:
		case <-poll.C:
		case <-keepalive.C:
			if err := ping(); err != nil {
				return err
			}
		}
	}
}
