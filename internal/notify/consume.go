package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/pipeline"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/store"
)

// Durable consumer names. Every replica subscribes with them, so the replicas share the events.
const (
	ConsumerBuilds = "notifications-builds"
	ConsumerGitOps = "notifications-gitops"
)

// SubjectGitOps is what the GitOps consumer reads (pipeline.BuildEventsSubject the builds').
var SubjectGitOps = bus.SubjectRoot + ".*." + runtimes.EventDomain + ".>"

// Run consumes build and GitOps events, queueing their notifications, until ctx ends. A
// subscription that cannot be made is tried again with backoff; the events wait in the stream.
func (s *Service) Run(ctx context.Context, b *bus.Bus) error {
	return bus.Hold(ctx, s.log.With("consumer", "notifications"),
		func() (*bus.Subscription, error) {
			return bus.Subscribe(ctx, b, ConsumerBuilds, pipeline.BuildEventsSubject, s.HandleBuildEvent)
		},
		func() (*bus.Subscription, error) {
			return bus.Subscribe(ctx, b, ConsumerGitOps, SubjectGitOps, s.HandleGitOpsEvent)
		})
}

// subjectEvent returns the event token of a freshet.<account>.<domain>.<event>… subject.
func subjectEvent(subject string) string {
	parts := strings.Split(subject, ".")
	if len(parts) < 4 {
		return ""
	}
	return parts[3]
}

// eventKey is the event's identity: the key it was published with, else its subject and the
// time the stream stored it (the same on every delivery).
func eventKey(subject, key string, published time.Time) string {
	if key != "" {
		return key
	}
	return subject + "@" + strconv.FormatInt(published.UnixNano(), 10)
}

// target is what an event is about, for subscriptions' filters.
type target struct{ pipeline, application string }

// queue queues m for every channel of account with a subscription to one of kinds that target
// passes, once per channel and event key: a redelivered event queues nothing.
func (s *Service) queue(ctx context.Context, account, key string, kinds []string, t target, m Message) error {
	subs, err := s.db.ListNotificationSubscriptions(ctx, account)
	if err != nil {
		return err
	}
	now := s.now().UTC()
	payload := encodeJSON(m)
	seen := map[string]bool{}
	var ds []store.NotificationDelivery
	for _, sub := range subs {
		if seen[sub.ChannelID] || !anyOf(sub.Events, kinds) ||
			sub.Pipeline != "" && sub.Pipeline != t.pipeline || sub.Application != "" && sub.Application != t.application {
			continue
		}
		seen[sub.ChannelID] = true
		ds = append(ds, store.NotificationDelivery{ID: store.NewID(store.PrefixNotificationDelivery), AccountID: account, ChannelID: sub.ChannelID,
			EventKey: key, Kind: m.Event, Payload: payload, Status: StatusPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now})
	}
	if len(ds) == 0 {
		return nil
	}
	n, err := s.enqueueRows(ctx, ds)
	if err != nil {
		return fmt.Errorf("queue notifications of %s: %w", key, err)
	}
	if n > 0 {
		s.Kick()
	}
	return nil
}

func anyOf(have, want []string) bool {
	for _, w := range want {
		for _, h := range have {
			if h == w {
				return true
			}
		}
	}
	return false
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return truncate(s, 300)
}

func addField(fs []Field, name, value string) []Field {
	if value == "" {
		return fs
	}
	return append(fs, Field{Name: name, Value: truncate(value, 500)})
}

// HandleBuildEvent queues the notifications of a build's end (build-finished, and build-failed
// when it failed). Started events and builds that no longer exist queue nothing.
func (s *Service) HandleBuildEvent(ctx context.Context, m bus.Message[pipeline.BuildEvent]) error {
	if subjectEvent(m.Subject) != pipeline.EventBuildFinished {
		return nil
	}
	account := bus.SubjectAccount(m.Subject)
	b, err := s.db.GetBuild(ctx, account, m.Data.BuildID)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	status := m.Data.Status
	if status == "" {
		status = b.Status
	}
	name := "(a deleted pipeline)"
	if pl, err := s.db.GetPipeline(ctx, account, b.PipelineID); err == nil {
		name = pl.ProjectName + "/" + pl.Name
	} else if !errors.Is(err, errdefs.ErrNotFound) {
		return err
	}
	kinds, event, verb := []string{EventBuildFinished}, EventBuildFinished, "ended "+status
	switch status {
	case pipeline.StatusSuccess:
		verb = "succeeded"
	case pipeline.StatusFailed:
		kinds, event, verb = append(kinds, EventBuildFailed), EventBuildFailed, "failed"
	case pipeline.StatusTerminated:
		verb = "was terminated"
	}
	at := b.FinishedAt
	if at.IsZero() {
		at = m.Published
	}
	var fs []Field
	fs = addField(fs, "Pipeline", name)
	fs = addField(fs, "Status", status)
	fs = addField(fs, "Branch", b.Branch)
	fs = addField(fs, "Commit", short(b.SHA))
	fs = addField(fs, "Trigger", b.TriggerType)
	if !b.StartedAt.IsZero() && !b.FinishedAt.IsZero() {
		fs = addField(fs, "Duration", b.FinishedAt.Sub(b.StartedAt).Round(time.Second).String())
	}
	fs = addField(fs, "Reason", b.Reason)
	msg := Message{Event: event, Account: account, Title: fmt.Sprintf("Build #%d of %s %s", b.Number, name, verb),
		Text: firstLine(b.CommitMessage), URL: s.link("/builds/" + url.PathEscape(b.ID)), Fields: fs, At: at.UTC()}
	return s.queue(ctx, account, eventKey(m.Subject, m.Key, m.Published), kinds, target{pipeline: name}, msg)
}

func (s *Service) link(path string) string {
	if s.baseURL == "" {
		return ""
	}
	return s.baseURL + path
}

// HandleGitOpsEvent queues the notifications of a finished sync (deployment), a transition to
// Degraded (health-degraded) and an aborted Rollout update (rollout-aborted). Other GitOps
// events queue nothing; a payload that does not decode or names another account is dropped.
func (s *Service) HandleGitOpsEvent(ctx context.Context, m bus.Message[json.RawMessage]) error {
	account := bus.SubjectAccount(m.Subject)
	key := eventKey(m.Subject, m.Key, m.Published)
	bad := func(err error) error { return bus.Permanent(fmt.Errorf("notifications: %s: %w", m.Subject, err)) }
	switch subjectEvent(m.Subject) {
	case runtimes.EventSyncFinished:
		var ev runtimes.SyncFinished
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			return bad(err)
		}
		if ev.AccountID != account || ev.Application == "" {
			return bad(fmt.Errorf("account %q, application %q", ev.AccountID, ev.Application))
		}
		result := "succeeded"
		if ev.Phase != "Succeeded" {
			result = "failed"
		}
		var fs []Field
		fs = addField(fs, "Application", ev.Application)
		fs = addField(fs, "Runtime", ev.Runtime)
		fs = addField(fs, "Result", result+" ("+ev.Phase+")")
		fs = addField(fs, "Revision", short(ev.Revision))
		dest := ev.DestName
		if dest == "" {
			dest = ev.DestServer
		}
		if ev.DestNamespace != "" {
			dest += " / " + ev.DestNamespace
		}
		fs = addField(fs, "Destination", strings.TrimPrefix(dest, " / "))
		fs = addField(fs, "Trigger", ev.InitiatedBy)
		fs = addField(fs, "User", ev.User)
		if !ev.StartedAt.IsZero() && !ev.FinishedAt.IsZero() {
			fs = addField(fs, "Duration", ev.FinishedAt.Sub(ev.StartedAt).Round(time.Second).String())
		}
		if ev.Commit != nil {
			fs = addField(fs, "Commit", firstLine(ev.Commit.Message))
		}
		msg := Message{Event: EventDeployment, Account: account, Title: fmt.Sprintf("Deployment of %s (%s) %s", ev.Application, ev.Runtime, result),
			Text: firstLine(ev.Message), URL: s.appLink(ev.Runtime, ev.Application), Fields: fs, At: ev.FinishedAt.UTC()}
		return s.queue(ctx, account, key, []string{EventDeployment}, target{application: ev.Application}, msg)
	case runtimes.EventHealthChanged:
		var ev runtimes.HealthChanged
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			return bad(err)
		}
		if ev.AccountID != account || ev.Application == "" {
			return bad(fmt.Errorf("account %q, application %q", ev.AccountID, ev.Application))
		}
		if ev.To != "Degraded" {
			return nil
		}
		at := ev.At
		if at.IsZero() {
			at = m.Published
		}
		var fs []Field
		fs = addField(fs, "Application", ev.Application)
		fs = addField(fs, "Runtime", ev.Runtime)
		fs = addField(fs, "Health", ev.From+" → "+ev.To)
		fs = addField(fs, "Revision", short(ev.Revision))
		msg := Message{Event: EventHealthDegraded, Account: account, Title: fmt.Sprintf("%s (%s) is Degraded", ev.Application, ev.Runtime),
			Text: firstLine(ev.Message), URL: s.appLink(ev.Runtime, ev.Application), Fields: fs, At: at.UTC()}
		return s.queue(ctx, account, key, []string{EventHealthDegraded}, target{application: ev.Application}, msg)
	case runtimes.EventRolloutChanged:
		var ev runtimes.RolloutChanged
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			return bad(err)
		}
		if ev.AccountID != account || ev.Application == "" {
			return bad(fmt.Errorf("account %q, application %q", ev.AccountID, ev.Application))
		}
		if ev.Kind != runtimev1.RolloutAborted {
			return nil
		}
		var fs []Field
		fs = addField(fs, "Application", ev.Application)
		fs = addField(fs, "Runtime", ev.Runtime)
		fs = addField(fs, "Rollout", ev.Namespace+"/"+ev.Rollout)
		if ev.Revision != 0 {
			fs = addField(fs, "Revision", strconv.FormatInt(ev.Revision, 10))
		}
		fs = addField(fs, "Strategy", ev.Strategy)
		fs = addField(fs, "Phase", ev.Phase)
		msg := Message{Event: EventRolloutAborted, Account: account, Title: fmt.Sprintf("Rollout %s of %s (%s) aborted", ev.Rollout, ev.Application, ev.Runtime),
			Text: firstLine(ev.Message), URL: s.appLink(ev.Runtime, ev.Application), Fields: fs, At: ev.At.UTC()}
		return s.queue(ctx, account, key, []string{EventRolloutAborted}, target{application: ev.Application}, msg)
	}
	return nil
}

func (s *Service) appLink(runtime, app string) string {
	if runtime == "" {
		return ""
	}
	return s.link("/applications/" + url.PathEscape(runtime) + "/" + url.PathEscape(app))
}
