package appset

import (
	"context"
	"fmt"
	"math"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
)

// Rolling-sync application statuses (Argo CD's).
const (
	StepWaiting     = "Waiting"
	StepPending     = "Pending"
	StepProgressing = "Progressing"
	StepHealthy     = "Healthy"
)

// stepOf returns the 1-based step whose matchExpressions select labels (0: none).
func stepOf(steps []Step, labels map[string]string) int {
	for i, s := range steps {
		if matchesRequirements(s.MatchExpressions, labels) {
			return i + 1
		}
	}
	return 0
}

// maxUpdateOf is how many applications of a step of size n may sync at once.
func maxUpdateOf(v any, n int) int {
	m, percent, err := parseMaxUpdate(v)
	if err != nil {
		return n
	}
	if !percent {
		return m
	}
	if m == 0 {
		return 0
	}
	return max(1, int(math.Floor(float64(n)*float64(m)/100)))
}

// rollingSync advances a RollingSync: the first step whose applications are not all Synced
// and Healthy syncs its out-of-sync applications, at most maxUpdate at a time; later steps
// wait. It reports whether the rollout is still in progress.
func (c *Controller) rollingSync(ctx context.Context, st *setState, set *ApplicationSet, res *Result) bool {
	steps := set.Spec.Strategy.RollingSync.Steps
	type appInfo struct {
		name  string
		prune bool
		step  int
		done  bool
		sync  engine.SyncCode
		h     health.Result
	}
	byStep := make([][]*appInfo, len(steps)+1)
	var infos []*appInfo
	for _, g := range res.Apps {
		s, err := c.opts.Engine.Status(g.App.Metadata.Name)
		ai := &appInfo{name: g.App.Metadata.Name, step: stepOf(steps, g.App.Metadata.Labels)}
		if sp := g.App.Spec.SyncPolicy; sp != nil && sp.Automated != nil {
			ai.prune = sp.Automated.Prune
		}
		if err == nil {
			ai.sync, ai.h = s.Sync, s.Health
			ai.done = !s.ReconciledAt.IsZero() && s.Sync == engine.Synced && s.Health.Status == health.Healthy
		}
		infos = append(infos, ai)
		byStep[ai.step] = append(byStep[ai.step], ai)
	}
	c.mu.Lock()
	syncing := map[string]bool{}
	for n := range st.syncing {
		syncing[n] = true
	}
	c.mu.Unlock()
	current := 0
	for i := 1; i <= len(steps); i++ {
		for _, ai := range byStep[i] {
			if !ai.done || syncing[ai.name] {
				current = i
				break
			}
		}
		if current != 0 {
			break
		}
	}
	if current != 0 {
		apps := byStep[current]
		limit := maxUpdateOf(steps[current-1].MaxUpdate, len(apps))
		inFlight := 0
		for _, ai := range apps {
			if syncing[ai.name] || (ai.sync == engine.Synced && ai.h.Status == health.Progressing) {
				inFlight++
			}
		}
		for _, ai := range apps {
			if inFlight >= limit {
				break
			}
			if syncing[ai.name] || ai.done || ai.sync != engine.OutOfSync {
				continue
			}
			inFlight++
			syncing[ai.name] = true
			c.startSync(ctx, st, ai.name, ai.prune)
		}
	}
	var out []AppStep
	for _, ai := range infos {
		s := AppStep{App: ai.name, Step: ai.step}
		switch {
		case ai.step == 0:
			s.Status, s.Message = StepWaiting, "no step selects this application: sync it yourself"
		case syncing[ai.name]:
			s.Status = StepProgressing
		case ai.done:
			s.Status = StepHealthy
		case ai.step == current && ai.sync == engine.Synced:
			s.Status, s.Message = StepProgressing, ai.h.Message
		case ai.step == current:
			s.Status = StepPending
		default:
			s.Status = StepWaiting
		}
		out = append(out, s)
	}
	c.mu.Lock()
	st.status.Steps = out
	c.mu.Unlock()
	if current != 0 {
		c.setCondition(st, ConditionRolloutProgressing, "True", fmt.Sprintf("step %d of %d", current, len(steps)))
		return true
	}
	c.setCondition(st, ConditionRolloutProgressing, "False", "every step is Synced and Healthy")
	return false
}

// startSync syncs one application in the background for the rolling sync.
func (c *Controller) startSync(ctx context.Context, st *setState, name string, prune bool) {
	c.mu.Lock()
	st.syncing[name] = true
	c.mu.Unlock()
	c.bg.Go(func() {
		_, err := c.opts.Engine.Sync(ctx, name, engine.SyncOptions{Prune: prune, InitiatedBy: engine.InitiatedByAutomated})
		if err != nil {
			c.log.Warn("rolling sync", "applicationset", st.status.Name, "app", name, "err", err)
		}
		c.mu.Lock()
		delete(st.syncing, name)
		c.mu.Unlock()
		c.kick()
	})
}
