package appset

import (
	"context"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
)

// Hook is the controller as the engine sees it (engine.Options.AppSets): ApplicationSets an
// application renders (app of apps) are owned by it and generated like those in git.
type Hook struct{ c *Controller }

var _ engine.AppSets = Hook{}

// Hook returns the controller's engine hook.
func (c *Controller) Hook() Hook { return Hook{c} }

// Check decodes an ApplicationSet manifest.
func (h Hook) Check(data []byte) error {
	_, err := Decode(data)
	return err
}

// Put creates or replaces an ApplicationSet owned by application owner.
func (h Hook) Put(owner string, data []byte) error {
	set, err := Decode(data)
	if err != nil {
		return err
	}
	return h.c.Put(Entry{Set: set, File: "application " + owner, Owner: owner})
}

// State reports an ApplicationSet's owner and health.
func (h Hook) State(name string) (string, bool, health.Result) {
	h.c.mu.Lock()
	st := h.c.sets[name]
	h.c.mu.Unlock()
	if st == nil {
		return "", false, health.Result{}
	}
	s, _ := h.c.Status(name)
	return st.entry.Owner, true, s.Health()
}

// Delete removes an ApplicationSet owner owns, with its applications.
func (h Hook) Delete(ctx context.Context, name, owner string, cascade bool) error {
	return h.c.Delete(ctx, name, owner, cascade)
}
