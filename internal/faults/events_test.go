package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
)

// Item 2: every committed audit record reaches the bus, once. 16 clients change things at once
// (each change writes its audit record in its own transaction) through every replica — two
// `freshet server` replicas sharing PostgreSQL and a NATS, one replica on SQLite — and every
// record in the database must be in the stream exactly once: an event the relay skipped is
// lost to everything downstream of the bus.
func TestFaultEveryAuditRecordPublished(t *testing.T) {
	const writers, perReplica = 16, 1500
	url := natsServer(t)
	cp := newControlPlane(t, "server", "--nats", url)
	replicas := []*controlPlane{cp}
	if backend() == "postgres" {
		replicas = append(replicas, cp.replica())
	}
	records := perReplica * len(replicas)
	work := make(chan int, records)
	for i := range records {
		work <- i
	}
	close(work)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for w := range writers {
		c := replicas[w%len(replicas)].admin
		wg.Go(func() {
			for i := range work {
				if _, err := c.CreateProject(context.Background(), fmt.Sprintf("p%d", i)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d changes failed; first: %v", len(errs), records, errs[0])
	}

	// Every record the database holds (the projects', and the logins')…
	var ids []string
	for after := ""; ; {
		page, err := cp.admin.ListAudit(context.Background(), client.AuditFilter{ListOptions: client.ListOptions{Limit: 1000, After: after}})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Items {
			ids = append(ids, e.ID)
		}
		if page.NextCursor == "" {
			break
		}
		after = page.NextCursor
	}
	if len(ids) < records {
		t.Fatalf("%d audit records, want at least %d", len(ids), records)
	}
	// …must reach the stream. The relays are woken by every change, so this takes
	// milliseconds; a record still missing after 20 s was skipped for good.
	stream := readStream(t, url, "freshet.*.audit.>")
	missing := func() int {
		stream.poll(t)
		n := 0
		for _, id := range ids {
			if stream.keys[id] == 0 {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(20 * time.Second)
	lost := missing()
	for lost > 0 && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		lost = missing()
	}
	twice := 0
	for _, n := range stream.keys {
		twice += max(n-1, 0)
	}
	row(t, "2", fmt.Sprintf("audit records never published, %d written by %d clients on %d replica(s) (%s)", len(ids), writers, len(replicas), backend()), lost)
	row(t, "2", fmt.Sprintf("audit events in the stream twice, same run (%s)", backend()), twice)
	if lost > 0 || twice > 0 {
		t.Fatalf("%d of %d audit records never published, %d published twice", lost, len(ids), twice)
	}
}
