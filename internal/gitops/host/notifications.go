package host

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/notifications"
	"github.com/freshet-dev/freshet/internal/gitops/repocreds"
)

// newNotifications builds the Argo CD Notifications controller when the repository
// credentials' source also keeps argocd-notifications-cm (nil otherwise).
func (h *Host) newNotifications() error {
	if _, ok := h.opts.RepoCreds.(repocreds.NotificationsSource); !ok {
		return nil
	}
	c, err := notifications.New(notifications.Options{
		Lookup:    h.notificationSubject,
		StateFile: filepath.Join(h.opts.Dir, "notifications", "state.json"),
		Policy:    h.opts.Policy,
		RootCAs:   h.opts.MailRootCAs,
		Logger:    h.log.With("component", "notifications"),
	})
	if err != nil {
		return err
	}
	h.notif = c
	return nil
}

// Notifications is the Argo CD Notifications controller (nil when the runtime has no place
// for argocd-notifications-cm).
func (h *Host) Notifications() *notifications.Controller { return h.notif }

// notificationSubject is an application as Argo CD Notifications' triggers see it.
func (h *Host) notificationSubject(name string) (notifications.Subject, bool) {
	spec := h.rep.spec(name)
	if spec == nil {
		return notifications.Subject{}, false
	}
	st, err := h.eng.Status(name)
	if err != nil {
		return notifications.Subject{}, false
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return notifications.Subject{}, false
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return notifications.Subject{}, false
	}
	// History and summary as on an Application resource: templates read .app.status.summary.images
	// and .app.status.history as they do on Argo CD's objects.
	x := statusExtras{historyLimit: engine.DefaultHistoryLimit}
	x.history, _ = h.eng.History(name)
	x.summary, _ = h.eng.Summary(name)
	status := argoStatus(&st, problem{}, time.Now(), x)
	// The status as it reads in JSON (the triggers compare strings, as on Argo CD's objects).
	sraw, _ := json.Marshal(status)
	var sobj map[string]any
	_ = json.Unmarshal(sraw, &sobj)
	obj["status"] = sobj
	if md, ok := obj["metadata"].(map[string]any); ok && md["namespace"] == nil && h.capps != nil {
		md["namespace"] = h.capps.ns
	}
	subj := notifications.Subject{App: obj}
	if p := h.project(spec.Spec.Project); p != nil {
		subj.ProjectAnnotations = p.Metadata.Annotations
		if raw, err := json.Marshal(p); err == nil {
			_ = json.Unmarshal(raw, &subj.Project)
		}
	}
	return subj, true
}

// loadNotifications reads argocd-notifications-cm and its Secret and hands a changed
// configuration to the controller; problems degrade the gitops component, naming the key.
func (h *Host) loadNotifications(ctx context.Context) {
	if h.notif == nil {
		return
	}
	src := h.opts.RepoCreds.(repocreds.NotificationsSource)
	data, secret, err := src.LoadNotifications(ctx)
	if err != nil {
		h.log.Warn("reading argocd-notifications-cm failed; the last configuration stays in use", "err", err)
		h.mu.Lock()
		h.notifyErrs = []string{err.Error()}
		h.mu.Unlock()
		return
	}
	raw, _ := json.Marshal([]any{data, secret})
	sum := sha256.Sum256(raw)
	h.mu.Lock()
	same := h.notifySum == sum
	h.notifySum = sum
	h.mu.Unlock()
	if same {
		return
	}
	if data == nil {
		h.mu.Lock()
		h.notifyErrs = nil
		h.mu.Unlock()
		h.notif.SetConfig(nil)
		return
	}
	cfg, problems := notifications.ParseConfig(data, secret, notifications.ParseOptions{})
	msgs := make([]string, 0, len(problems))
	for _, p := range problems {
		h.log.Warn("argocd-notifications-cm", "err", p)
		msgs = append(msgs, p.Error())
	}
	h.mu.Lock()
	h.notifyErrs = msgs
	h.mu.Unlock()
	h.notif.SetConfig(cfg)
}
