package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/providers"
	"github.com/freshet-dev/freshet/internal/store"
)

// Build events, published through the outbox in the transaction that changes the build's
// status: freshet.<account>.builds.started when a runner takes it (once per attempt) and
// freshet.<account>.builds.finished when it ends.
const (
	EventBuildStarted  = "started"
	EventBuildFinished = "finished"
)

// BuildEvent is the payload of a build event.
type BuildEvent struct {
	BuildID string `json:"buildId"`
	Status  string `json:"status"` // the status the build moved to
	Attempt int    `json:"attempt,omitempty"`
}

// BuildEventsSubject is what consumers of build events subscribe to.
const BuildEventsSubject = "freshet.*.builds.>"

// CommitStatusConsumer is the durable name of the commit status consumer.
const CommitStatusConsumer = "commit-statuses"

func buildEvent(accountID, buildID, event, status string, attempt int) store.OutboxMessage {
	key := "build-" + event + "/" + buildID
	if event == EventBuildStarted {
		key += "/" + strconv.Itoa(attempt)
	}
	data, _ := json.Marshal(BuildEvent{BuildID: buildID, Status: status, Attempt: attempt})
	return store.OutboxMessage{AccountID: accountID, Subject: "freshet." + accountID + ".builds." + event, Key: key, Payload: string(data), CreatedAt: time.Now()}
}

func finalStatus(status string) bool {
	return status == StatusSuccess || status == StatusFailed || status == StatusTerminated
}

// setBuildStatus is SetBuildStatus that, when the build ends, queues its finished event in the
// same transaction.
func (s *Service) setBuildStatus(ctx context.Context, accountID, buildID, leaseID string, from []string, status, reason string, finished time.Time) (bool, error) {
	var ok bool
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		if ok, err = tx.SetBuildStatus(ctx, accountID, buildID, leaseID, from, status, reason, finished); err != nil || !ok || !finalStatus(status) {
			return err
		}
		return tx.InsertOutbox(ctx, buildEvent(accountID, buildID, EventBuildFinished, status, 0))
	})
	if ok && finalStatus(status) {
		s.onEvents()
	}
	return ok, err
}

// claimBuild is ClaimBuild that queues the build's started event in the same transaction.
func (s *Service) claimBuild(ctx context.Context, b store.Build, runnerID, leaseID string, expires, now time.Time) (bool, error) {
	var ok bool
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		// The claim takes one of the account's concurrent builds: admitted under the plan
		// row's lock, so claims at the limit through any replica never run one too many.
		if err := s.admit(ctx, tx, b.AccountID, billing.ConcurrentBuilds); err != nil {
			return err
		}
		var err error
		if ok, err = tx.ClaimBuild(ctx, b.AccountID, b.ID, runnerID, leaseID, expires, now); err != nil || !ok {
			return err
		}
		return tx.InsertOutbox(ctx, buildEvent(b.AccountID, b.ID, EventBuildStarted, StatusRunning, b.Attempt+1))
	})
	if ok {
		s.onEvents()
	}
	return ok, err
}

// HandleBuildEvent posts the commit status of the build an event is about, for a build with a
// repository and a commit whose pipeline lists a git context (the first of the build's
// trigger's provider, else the first): pending when it started, success, failure or error when
// it ended, linked to the build's page. A started event of a build that has ended posts
// nothing (its finished event posts the end), so a redelivered event never undoes a later one.
// A provider that fails is retried by the bus (an error); one that refuses (the token, the
// repository) is not (bus.Permanent). Failures of the end's status are written to the build's
// log, on the first attempt and when giving up; those of pending (the runner still writes the
// log) to the server's log.
func (s *Service) HandleBuildEvent(ctx context.Context, m bus.Message[BuildEvent]) error {
	b, err := s.db.GetBuild(ctx, bus.SubjectAccount(m.Subject), m.Data.BuildID)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if b.Repo == "" || b.SHA == "" {
		return nil
	}
	state := ""
	switch {
	case !finalStatus(b.Status):
		state = providers.StatePending
	case m.Data.Status == StatusRunning:
		return nil // the finished event posts the end
	case b.Status == StatusSuccess:
		state = providers.StateSuccess
	case b.Status == StatusFailed:
		state = providers.StateFailure
	default:
		state = providers.StateError
	}
	pl, err := s.db.GetPipeline(ctx, b.AccountID, b.PipelineID)
	if err != nil {
		return err
	}
	gc, ok, err := s.statusContext(ctx, pl, b)
	if err != nil || !ok {
		return err
	}
	vals, err := s.contextValues(gc)
	if err != nil {
		return bus.Permanent(err)
	}
	g := toGitProvider(vals)
	err = s.postStatus(ctx, g, b, pl, state)
	if err == nil {
		return nil
	}
	permanent := !errors.Is(err, errdefs.ErrUnavailable)
	what := "will retry"
	if permanent || m.Delivered >= bus.DefaultMaxDeliver {
		what = "not retried"
	}
	line := fmt.Sprintf("[freshet] warning: the %s commit status to %s (git context %s) failed, %s: %v", state, g.Provider, gc.Name, what, err)
	// Only an ended build's log takes the line: a running build's log is its runner's to write.
	if state != providers.StatePending && (m.Delivered == 1 || what == "not retried") {
		s.appendLogLine(ctx, b, line)
	} else {
		s.log.Warn("commit status", "build", b.ID, "state", state, "provider", g.Provider, "context", gc.Name, "delivery", m.Delivered, "err", err)
	}
	if permanent {
		return bus.Permanent(err)
	}
	return err
}

// statusContext picks the git context that reports b's statuses.
func (s *Service) statusContext(ctx context.Context, pl store.Pipeline, b store.Build) (store.ConfigContext, bool, error) {
	cfg, err := decodeConfig(pl)
	if err != nil {
		return store.ConfigContext{}, false, err
	}
	provider := ""
	if b.TriggerID != "" {
		if t, err := s.db.TriggerByID(ctx, b.TriggerID); err == nil && t.AccountID == b.AccountID {
			if tc, err := decodeTriggerConfig(t); err == nil {
				provider = tc.Provider
			}
		}
	}
	var first *store.ConfigContext
	for _, name := range cfg.Contexts {
		c, err := s.db.GetContext(ctx, b.AccountID, name)
		if errors.Is(err, errdefs.ErrNotFound) {
			continue
		}
		if err != nil {
			return c, false, err
		}
		if c.Type != ContextGit {
			continue
		}
		if provider == "" {
			return c, true, nil
		}
		vals, err := contextData(c)
		if err != nil {
			return c, false, err
		}
		if vals[gitProvider] == provider {
			return c, true, nil
		}
		if first == nil {
			first = &c
		}
	}
	if first != nil {
		return *first, true, nil
	}
	return store.ConfigContext{}, false, nil
}

func (s *Service) postStatus(ctx context.Context, g *GitProvider, b store.Build, pl store.Pipeline, state string) error {
	if err := s.net.CheckProviderURL("git.url", g.URL); err != nil {
		return err
	}
	cl, err := providers.New(g.Provider, g.URL, g.Token, s.net.HTTPClient(providers.DefaultTimeout))
	if err != nil {
		return err
	}
	desc := map[string]string{providers.StatePending: "the build is running", providers.StateSuccess: "the build succeeded",
		providers.StateFailure: "the build failed", providers.StateError: "the build was " + b.Status}[state]
	return cl.WithUsername(g.Username).PostStatus(ctx, b.Repo, b.SHA, providers.Status{State: state, Context: "freshet/" + fullName(pl),
		TargetURL: s.baseURL + "/builds/" + b.ID, Description: fmt.Sprintf("#%d: %s", b.Number, desc)})
}

// appendLogLine adds a line to a build's log, for what happened after or outside its run.
func (s *Service) appendLogLine(ctx context.Context, b store.Build, line string) {
	cur, err := s.db.GetBuild(ctx, b.AccountID, b.ID)
	if err != nil {
		return
	}
	if _, err := s.db.AppendLog(ctx, b.ID, cur.LogSize, []byte("\n"+line+"\n")); err != nil {
		s.log.Warn("append to build log", "build", b.ID, "err", err)
	}
}

// RunCommitStatuses consumes build events and posts commit statuses (HandleBuildEvent) until
// ctx ends. Every replica runs it; the durable name makes them share the work.
func (s *Service) RunCommitStatuses(ctx context.Context, b *bus.Bus) error {
	return bus.Hold(ctx, s.log.With("consumer", CommitStatusConsumer), func() (*bus.Subscription, error) {
		return bus.Subscribe(ctx, b, CommitStatusConsumer, BuildEventsSubject, s.HandleBuildEvent)
	})
}
