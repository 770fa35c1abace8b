package agent

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/freshet-dev/freshet/internal/bus"
)

// eventsNATS is the runtime's own NATS for EventBuses of type jetstream (Argo would deploy a
// NATS StatefulSet for one): the one at url, or a JetStream server embedded in the runtime
// (internal/bus, no network listener) storing under dir. It is started on first use and
// shared by every such bus.
type eventsNATS struct {
	url, dir string
	log      *slog.Logger

	mu sync.Mutex
	nc *nats.Conn
	b  *bus.Bus
}

func (e *eventsNATS) conn(ctx context.Context) (*nats.Conn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.nc != nil {
		return e.nc, nil
	}
	if e.url != "" {
		nc, err := nats.Connect(e.url, nats.Name("freshet-runtime-events"), nats.MaxReconnects(-1), nats.Timeout(5*time.Second))
		if err != nil {
			return nil, fmt.Errorf("connect to --events-nats-url: %w", err)
		}
		e.nc = nc
		return nc, nil
	}
	b, err := bus.Open(ctx, bus.Options{DataDir: e.dir, Stream: "FRESHET_RUNTIME"}, e.log.With("component", "events-nats"))
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: %w", err)
	}
	e.b, e.nc = b, b.Conn()
	return e.nc, nil
}

func (e *eventsNATS) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.b != nil {
		_ = e.b.Close()
	} else if e.nc != nil {
		e.nc.Close()
	}
	e.nc, e.b = nil, nil
}
