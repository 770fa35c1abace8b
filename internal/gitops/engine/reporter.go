package engine

import (
	"context"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
)

// EventType is what happened to an application.
type EventType string

// Event types.
const (
	// EventAppChanged: the app's status changed (sync status, health, revision, resources,
	// conditions). Status is set.
	EventAppChanged EventType = "AppChanged"
	// EventAppDeleted: the app was removed from the engine.
	EventAppDeleted EventType = "AppDeleted"
	// EventSyncStarted: a sync began. Sync is set (phase Running).
	EventSyncStarted EventType = "SyncStarted"
	// EventSyncFinished: a sync ended. Sync is set; History too unless it was a dry run.
	EventSyncFinished EventType = "SyncFinished"
	// EventHealthChanged: the app's health changed from HealthFrom to Status.Health.
	EventHealthChanged EventType = "HealthChanged"
)

// Event is one report from the engine. Everything in it is a copy the receiver owns.
type Event struct {
	Type       EventType     `json:"type"`
	App        string        `json:"app"`
	At         time.Time     `json:"at"`
	Status     *AppStatus    `json:"status,omitempty"`
	Sync       *SyncResult   `json:"sync,omitempty"`
	History    *HistoryEntry `json:"history,omitempty"`
	HealthFrom health.Status `json:"healthFrom,omitempty"`
}

// Reporter receives the engine's events; the runtime forwards them to the control plane.
// Report is called from the engine's goroutines, in order per application, and must not
// block: queue the event and return.
type Reporter interface {
	Report(ctx context.Context, ev Event)
}

// ReporterFunc adapts a function to Reporter.
type ReporterFunc func(ctx context.Context, ev Event)

// Report calls f.
func (f ReporterFunc) Report(ctx context.Context, ev Event) { f(ctx, ev) }

var _ Reporter = ReporterFunc(nil)

type discardReporter struct{}

func (discardReporter) Report(context.Context, Event) {}
