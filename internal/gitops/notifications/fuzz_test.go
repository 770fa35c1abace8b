package notifications_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/notifications"
)

// FuzzParseConfig: argocd-notifications-cm is the team's text. Parsing never panics; every
// problem is invalid input naming the ConfigMap; a template that parses renders (or fails)
// within its bounds.
func FuzzParseConfig(f *testing.F) {
	f.Add("template.t", "message: '{{.app.metadata.name}}'\n", "trigger.x", "- when: app.status.sync.status == 'Synced'\n  send: [t]\n")
	f.Add("service.webhook.h", "url: $url\nheaders:\n- {name: A, value: $tok}\n", "subscriptions", "- recipients: [h]\n  selector: a=b\n")
	f.Add("service.slack", "token: $tok\napiURL: http://x/api/\n", "template.s", "slack:\n  attachments: '[{{range until 3}}{}{{end}}]'\n")
	f.Add("service.email.m", "host: smtp.x\nport: 25\nfrom: a@b\nsecurity: none\n", "context", "argocdUrl: x\n")
	f.Add("defaultTriggers", "[on-created]", "trigger.y", "- when: time.Now()\n  oncePer: app.metadata.name\n  send: [app-created]\n")
	f.Add("template.w", "webhook:\n  h:\n    method: PUT\n    path: '{{.app.metadata.name}}'\n    body: '{{toJson .app}}'\n", "x", "&a [*a, *a]")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		cfg, problems := notifications.ParseConfig(map[string]string{k1: v1, k2: v2},
			map[string][]byte{"tok": []byte("t"), "url": []byte("https://h.example/x")}, notifications.ParseOptions{NoCatalog: true})
		for _, p := range problems {
			if !errors.Is(p, errdefs.ErrInvalid) || !strings.Contains(p.Error(), notifications.ConfigMapName) {
				t.Fatalf("problem %v", p)
			}
		}
		app := map[string]any{"metadata": map[string]any{"name": "web"}, "status": map[string]any{"sync": map[string]any{"status": "Synced"}}}
		for name := range cfg.Templates {
			_, _ = cfg.Render(context.Background(), []string{name}, map[string]any{"app": app, "context": cfg.Context})
		}
	})
}
