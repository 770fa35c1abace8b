package events

import (
	"errors"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FuzzDecodeEventSource: an EventSource (synced from git by anyone who can commit) is refused
// with an error naming a field, or validates — and then compiles into routes and calendars
// without panicking, every route verified (a secret named) and every calendar firing in the
// future.
func FuzzDecodeEventSource(f *testing.F) {
	for _, y := range []string{
		esHead + "  webhook: {a: {endpoint: /a, method: POST, authSecret: {name: s, key: k}, filter: {expression: 'body.x == 1'}}}\n",
		esHead + "  calendar: {a: {schedule: '*/5 * * * *', timezone: Europe/Berlin, exclusionDates: ['2026-01-01']}, b: {interval: 10s}}\n",
		esHead + "  github: {a: {webhook: {endpoint: /gh}, repositories: [{owner: o, names: [n]}], events: [push], webhookSecret: {name: s, key: k}}}\n" +
			"  gitlab: {b: {webhook: {endpoint: /gl}, projects: ['1'], events: [PushEvents], secretToken: {name: s, key: k}}}\n" +
			"  bitbucket: {c: {webhook: {endpoint: /bb}, events: ['repo:push'], webhookSecret: {name: s, key: k}}}\n" +
			"  gitea: {d: {webhook: {endpoint: /gt}, webhookSecret: {name: s, key: k}}}\n",
	} {
		f.Add(toJSON(f, y))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := DecodeEventSource(data)
		if err != nil {
			var fe *errdefs.FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("refusal names no field: %v", err)
			}
			return
		}
		run, cals, err := buildSource(es)
		if err != nil {
			t.Fatalf("valid event source does not build: %v", err)
		}
		for k, r := range run.routes {
			if r.secret.Name == "" || r.secret.Key == "" {
				t.Fatalf("route %s has no secret", k)
			}
		}
		for _, c := range cals {
			if c.cal.interval == 0 && c.cal.sched.String() == "" {
				t.Fatalf("calendar %s neither schedule nor interval", c.event)
			}
		}
	})
}

// FuzzDecodeSensor: a Sensor is refused with an error naming a field, or validates and
// compiles: its conditions parse and name only its dependencies.
func FuzzDecodeSensor(f *testing.F) {
	f.Add(toJSON(f, snHead+okDeps+"  triggers: [{template: {name: t, conditions: 'd || (d && !d)', k8s: {source: {resource: {"+wfRes+"}}, parameters: [{src: {dependencyName: d, dataKey: body.a}, dest: spec.arguments.parameters.0.value}]}}}]\n"))
	f.Add(toJSON(f, snHead+"  dependencies: [{name: d, eventSourceName: es, eventName: e, filters: {data: [{path: body.n, type: number, comparator: '>=', value: ['1']}], exprs: [{expr: 'a == 1', fields: [{name: a, path: body.a}]}], time: {start: '01:00:00', stop: '02:00:00'}}}]\n"+
		"  triggers: [{template: {name: t, argoWorkflow: {operation: submit, source: {resource: {"+wfRes+"}}}}}]\n"))
	f.Add(toJSON(f, snHead+okDeps+"  triggers: [{template: {name: t, k8s: {source: {resource: {"+wfRes+"}}}}, retryStrategy: {steps: 3, duration: 1s, factor: 2, jitter: '0.5'}, rateLimit: {unit: Minute, requestsPerUnit: 10},"+
		" policy: {k8s: {labels: {done: 'yes'}, backoff: {duration: 1000000, steps: 2}, errorOnBackoffTimeout: true}, status: {allow: [200]}}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSensor(data)
		if err != nil {
			var fe *errdefs.FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("refusal names no field: %v", err)
			}
			return
		}
		bus := &busConn{root: busRoot("ns", "default")}
		cs, err := compileSensor(s, bus)
		if err != nil {
			t.Fatalf("valid sensor does not compile: %v", err)
		}
		deps := map[string]bool{}
		for _, d := range s.Spec.Dependencies {
			deps[d.Name] = true
		}
		for _, tr := range cs.triggers {
			for n := range tr.deps {
				if !deps[n] {
					t.Fatalf("trigger %s waits for %q, not a dependency", tr.t.Template.Name, n)
				}
			}
			tr.satisfied()
			if tr.run == nil || tr.run.retry.steps < 1 {
				t.Fatalf("trigger %s runs no attempt: %+v", tr.t.Template.Name, tr.run)
			}
		}
	})
}
