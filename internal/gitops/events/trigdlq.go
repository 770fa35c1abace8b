package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// argoTriggerKinds are Argo Events' trigger kinds that do not run here, each with why.
var argoTriggerKinds = map[string]string{
	"awsLambda":       "",
	"kafka":           "",
	"openWhisk":       "",
	"azureEventHubs":  "",
	"azureServiceBus": "",
	"pulsar":          "",
	"email":           "",
	"custom": "a custom trigger calls a gRPC trigger server of your own, which Freshet does not run or reach " +
		"(an http trigger can call your service instead)",
}

// refuseKind is the error of a template field that is not a kind built here: Argo's other
// kinds by name, anything else as an unknown field.
func refuseKind(f, k string) error {
	why, ok := argoTriggerKinds[k]
	switch {
	case !ok:
		return errdefs.Invalid(f, "", "is not a field of a trigger template (trigger kinds that run: "+supportedTriggers+")")
	case why != "":
		return errdefs.Invalid(f, "", "is not supported: "+why+"; see docs/runtimes.md")
	}
	return errdefs.Invalid(f, "", "is not supported yet: triggers of type "+k+" are not built in Freshet ("+supportedTriggers+" are; see docs/runtimes.md)")
}

// otherKinds records in t.Other the fields of a template (raw) that are not read here, so
// validation refuses them by name.
func otherKinds(t *TriggerTemplate, raw map[string]json.RawMessage) {
	if t == nil {
		return
	}
	for k, v := range raw {
		if !triggerKinds[k] {
			if t.Other == nil {
				t.Other = map[string]json.RawMessage{}
			}
			t.Other[k] = v
		}
	}
}

// validateDLQ checks a trigger's dlqTrigger (nil: none): a trigger as the others, whose
// events are its trigger's, without a dlqTrigger of its own (Argo does not fire one).
func validateDLQ(f string, d *Trigger, deps map[string]bool) error {
	if d == nil {
		return nil
	}
	if d.Template == nil {
		return errdefs.Invalid(f+".template", "", "is required: the trigger run when its trigger fails")
	}
	if d.Template.Name == "" || !nameRe.MatchString(d.Template.Name) {
		return errdefs.Invalid(f+".template.name", d.Template.Name, "is required: letters, digits, '-', '_' and '.'")
	}
	if d.DlqTrigger != nil {
		return errdefs.Invalid(f+".dlqTrigger", "", "is not supported: a dlqTrigger has no dlqTrigger of its own (Argo never fires it)")
	}
	if err := checkParameters(f+".parameters", d.Parameters, deps); err != nil {
		return err
	}
	if err := validateTemplate(f+".template", d.Template, deps, len(d.Parameters) > 0); err != nil {
		return err
	}
	_, err := compileTriggerRun(f, d)
	return err
}

// compileDLQ is the dead-letter trigger of t (nil without one, or without atLeastOnce: as
// Argo, it fires only for a trigger executed at least once). It sees t's events.
func compileDLQ(f string, t *compiledTrigger) (*compiledTrigger, error) {
	d := t.t.DlqTrigger
	if d == nil || d.Template == nil || !t.t.AtLeastOnce {
		return nil, nil
	}
	run, err := compileTriggerRun(f, d)
	if err != nil {
		return nil, err
	}
	return &compiledTrigger{t: *d, deps: t.deps, have: t.have, run: run}, nil
}

// execute runs a trigger with its retryStrategy and, when it still fails and has a
// dlqTrigger (with atLeastOnce), the dlqTrigger with the same events and its own
// retryStrategy. The dlqTrigger having run, the trigger's failure is final (a permanentError
// saying what both did); the dlqTrigger failing for a while leaves the event to be delivered
// again, the trigger and the dlqTrigger running again.
func (c *Controller) execute(ctx context.Context, cs *compiledSensor, t *compiledTrigger, wait waitFunc) (string, error) {
	key := cs.ns + "/" + cs.name
	what, err := t.run.do(ctx, wait, func() (string, error) { return c.fire(ctx, cs, t, wait) }, func(n int, err error) {
		c.log.Warn("sensor: trigger attempt failed; retrying (retryStrategy)", logKey, key, "trigger", t.t.Template.Name, "attempt", n, logErr, err)
	})
	if err == nil || t.dlq == nil || ctx.Err() != nil {
		return what, err
	}
	d := t.dlq
	name := d.t.Template.Name
	c.log.Warn("sensor: trigger failed; running its dlqTrigger", logKey, key, "trigger", t.t.Template.Name, "dlqTrigger", name, logErr, err)
	dwhat, derr := d.run.do(ctx, wait, func() (string, error) { return c.fire(ctx, cs, d, wait) }, func(n int, err error) {
		c.log.Warn("sensor: dlqTrigger attempt failed; retrying (retryStrategy)", logKey, key, "dlqTrigger", name, "attempt", n, logErr, err)
	})
	if derr == nil {
		return "", permanentError{fmt.Errorf("%w; dlqTrigger %s ran: %s", err, name, dwhat)}
	}
	both := fmt.Errorf("%w; dlqTrigger %s failed too: %w", err, name, derr)
	var perm permanentError
	if errors.As(derr, &perm) {
		return "", permanentError{both}
	}
	return "", dlqTemporary{both}
}

// dlqTemporary is a failure whose dlqTrigger may still run: the event is delivered again
// even when the trigger's own error was permanent.
type dlqTemporary struct{ error }

func (e dlqTemporary) Unwrap() error { return nil }
