package notifications

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"

	"github.com/freshet-dev/freshet/internal/repourl"
)

// Bounds on a template's execution.
const (
	maxRendered    = 256 << 10 // bytes one template field may produce
	renderTimeout  = 2 * time.Second
	maxRepeat      = 10000 // sprig's until, untilStep, seq, repeat
	maxTemplateLen = 64 << 10
)

// Template is a compiled template.<name>.
type Template struct {
	Name    string
	message *template.Template
	email   *emailT
	slack   *slackT
	webhook map[string]webhookT
}

type emailT struct{ subject, body *template.Template }
type slackT struct{ username, icon, attachments, blocks, groupingKey *template.Template }
type webhookT struct {
	method     string
	path, body *template.Template
}

// Notification is a rendered notification: the templates a trigger sends, merged in order.
type Notification struct {
	Message string
	Email   *EmailTemplate
	Slack   *SlackTemplate
	Webhook map[string]WebhookTemplate
}

// hashWhen is Argo CD's key of a condition: its state entries carry it, so the state Argo CD
// left on an application means the same here.
func hashWhen(s string) string {
	h := sha1.Sum([]byte(s))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// funcs are the template functions: sprig's, less what reaches the environment or the
// network or costs without bound, with bounded repetition.
var funcs = func() template.FuncMap {
	f := sprig.TxtFuncMap()
	until, untilStep, seq := f["until"].(func(int) []int), f["untilStep"].(func(int, int, int) []int), f["seq"].(func(...int) string)
	for _, n := range []string{"env", "expandenv", "getHostByName", "genPrivateKey", "genCA", "genCAWithKey",
		"genSelfSignedCert", "genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey", "buildCustomCert",
		"derivePassword", "randBytes"} {
		delete(f, n)
	}
	bound := func(n int) error {
		if n > maxRepeat || n < -maxRepeat {
			return fmt.Errorf("%d is more than %d repetitions", n, maxRepeat)
		}
		return nil
	}
	f["until"] = func(n int) ([]int, error) {
		if err := bound(n); err != nil {
			return nil, err
		}
		return until(n), nil
	}
	f["untilStep"] = func(start, stop, step int) ([]int, error) {
		if step == 0 {
			return nil, nil
		}
		if err := bound((stop - start) / step); err != nil {
			return nil, err
		}
		return untilStep(start, stop, step), nil
	}
	f["seq"] = func(params ...int) (string, error) {
		for _, p := range params {
			if err := bound(p); err != nil {
				return "", err
			}
		}
		return seq(params...), nil
	}
	f["repeat"] = func(n int, s string) (string, error) {
		if n < 0 || n*len(s) > maxRendered {
			return "", fmt.Errorf("repeat would make more than %d bytes", maxRendered)
		}
		return strings.Repeat(s, n), nil
	}
	return f
}()

func parseT(name, field, text string) (*template.Template, error) {
	if text == "" {
		return nil, nil
	}
	if len(text) > maxTemplateLen {
		return nil, fmt.Errorf("%s is longer than %d bytes", field, maxTemplateLen)
	}
	t, err := template.New(name + "." + field).Funcs(funcs).Option("missingkey=default").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", field, err)
	}
	return t, nil
}

func compileTemplate(name string, spec TemplateSpec) (*Template, error) {
	t := &Template{Name: name}
	var err error
	if t.message, err = parseT(name, "message", spec.Message); err != nil {
		return nil, err
	}
	if e := spec.Email; e != nil {
		t.email = &emailT{}
		if t.email.subject, err = parseT(name, "email.subject", e.Subject); err != nil {
			return nil, err
		}
		if t.email.body, err = parseT(name, "email.body", e.Body); err != nil {
			return nil, err
		}
	}
	if s := spec.Slack; s != nil {
		t.slack = &slackT{}
		for _, p := range []struct {
			dst  **template.Template
			f, v string
		}{{&t.slack.username, "slack.username", s.Username}, {&t.slack.icon, "slack.icon", s.Icon},
			{&t.slack.attachments, "slack.attachments", s.Attachments}, {&t.slack.blocks, "slack.blocks", s.Blocks},
			{&t.slack.groupingKey, "slack.groupingKey", s.GroupingKey}} {
			if *p.dst, err = parseT(name, p.f, p.v); err != nil {
				return nil, err
			}
		}
	}
	if len(spec.Webhook) > 0 {
		t.webhook = map[string]webhookT{}
		for svc, w := range spec.Webhook {
			m := strings.ToUpper(strings.TrimSpace(w.Method))
			switch m {
			case "", "GET", "POST", "PUT", "PATCH", "DELETE":
			default:
				return nil, fmt.Errorf("webhook.%s.method %q: want GET, POST, PUT, PATCH or DELETE", svc, w.Method)
			}
			wt := webhookT{method: m}
			if wt.path, err = parseT(name, "webhook."+svc+".path", w.Path); err != nil {
				return nil, err
			}
			if wt.body, err = parseT(name, "webhook."+svc+".body", w.Body); err != nil {
				return nil, err
			}
			t.webhook[svc] = wt
		}
	}
	return t, nil
}

// limitedBuffer fails writes past its limit, which stops the template.
type limitedBuffer struct {
	bytes.Buffer
	limit int
}

var errTooLong = fmt.Errorf("the template made more than %d bytes", maxRendered)

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.limit {
		return 0, errTooLong
	}
	return b.Buffer.Write(p)
}

// exec runs t on vars, bounded in size; "" for a nil template.
func exec(t *template.Template, vars map[string]any) (string, error) {
	if t == nil {
		return "", nil
	}
	b := &limitedBuffer{limit: maxRendered}
	if err := t.Execute(b, vars); err != nil {
		return "", err
	}
	return b.String(), nil
}

// render applies t to n (Argo CD's order: a later template's non-empty parts win).
func (t *Template) render(n *Notification, vars map[string]any) error {
	var err error
	set := func(dst *string, tt *template.Template, keepNonEmpty bool) {
		if err != nil || tt == nil {
			return
		}
		var s string
		if s, err = exec(tt, vars); err == nil && (s != "" || !keepNonEmpty) {
			*dst = s
		}
	}
	set(&n.Message, t.message, false)
	if t.email != nil {
		if n.Email == nil {
			n.Email = &EmailTemplate{}
		}
		set(&n.Email.Subject, t.email.subject, true)
		set(&n.Email.Body, t.email.body, true)
	}
	if t.slack != nil {
		if n.Slack == nil {
			n.Slack = &SlackTemplate{}
		}
		set(&n.Slack.Username, t.slack.username, false)
		set(&n.Slack.Icon, t.slack.icon, false)
		set(&n.Slack.Attachments, t.slack.attachments, false)
		set(&n.Slack.Blocks, t.slack.blocks, false)
		set(&n.Slack.GroupingKey, t.slack.groupingKey, false)
	}
	for svc, w := range t.webhook {
		if n.Webhook == nil {
			n.Webhook = map[string]WebhookTemplate{}
		}
		out := WebhookTemplate{Method: w.method}
		set(&out.Path, w.path, false)
		set(&out.Body, w.body, false)
		n.Webhook[svc] = out
	}
	return err
}

// Render renders the named templates in order, bounded by renderTimeout: a template that
// runs longer is abandoned (its repetition is bounded, so it ends).
func (c *Config) Render(ctx context.Context, names []string, vars map[string]any) (*Notification, error) {
	ctx, cancel := context.WithTimeout(ctx, renderTimeout)
	defer cancel()
	type result struct {
		n   *Notification
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: fmt.Errorf("the template failed: %v", r)}
			}
		}()
		n := &Notification{}
		for _, name := range names {
			t, ok := c.Templates[name]
			if !ok {
				done <- result{err: fmt.Errorf("template %q is not configured (template.%s in %s)", name, name, ConfigMapName)}
				return
			}
			if err := t.render(n, vars); err != nil {
				done <- result{err: fmt.Errorf("template.%s: %v", name, err)}
				return
			}
		}
		done <- result{n: n}
	}()
	select {
	case r := <-done:
		return r.n, r.err
	case <-ctx.Done():
		return nil, errors.New("rendering the templates took longer than " + renderTimeout.String())
	}
}

// helpers are the namespaces of functions Argo CD gives conditions and templates.
func helpers() map[string]any {
	return map[string]any{
		"time": map[string]any{
			"Parse": func(s string) time.Time {
				t, err := time.Parse(time.RFC3339, s)
				if err != nil {
					panic(err)
				}
				return t
			},
			"Now":         time.Now,
			"Nanosecond":  time.Nanosecond,
			"Microsecond": time.Microsecond,
			"Millisecond": time.Millisecond,
			"Second":      time.Second,
			"Minute":      time.Minute,
			"Hour":        time.Hour,
			"Layout":      time.Layout, "ANSIC": time.ANSIC, "UnixDate": time.UnixDate, "RubyDate": time.RubyDate,
			"RFC822": time.RFC822, "RFC822Z": time.RFC822Z, "RFC850": time.RFC850, "RFC1123": time.RFC1123,
			"RFC1123Z": time.RFC1123Z, "RFC3339": time.RFC3339, "RFC3339Nano": time.RFC3339Nano, "Kitchen": time.Kitchen,
			"Stamp": time.Stamp, "StampMilli": time.StampMilli, "StampMicro": time.StampMicro, "StampNano": time.StampNano,
		},
		"strings": map[string]any{
			"ReplaceAll": strings.ReplaceAll,
			"ToUpper":    strings.ToUpper,
			"ToLower":    strings.ToLower,
		},
	}
}

// appHelpers are the namespaces bound to one application: sync and repo.
func appHelpers(app map[string]any) map[string]any {
	return map[string]any{
		"sync": map[string]any{
			"GetInfoItem": func(a map[string]any, name string) (string, error) { return getInfoItem(a, name) },
		},
		"repo": map[string]any{
			"RepoURLToHTTPS":    repoURLToHTTPS,
			"FullNameByRepoURL": fullNameByRepoURL,
			"QueryEscape":       url.QueryEscape,
		},
	}
}

// getInfoItem is the value of the info item name of the app's sync operation.
func getInfoItem(a map[string]any, name string) (string, error) {
	for _, path := range [][]string{{"operation", "info"}, {"status", "operationState", "operation", "info"}} {
		var cur any = a
		for _, p := range path {
			m, _ := cur.(map[string]any)
			cur = m[p]
		}
		items, _ := cur.([]any)
		for _, it := range items {
			m, _ := it.(map[string]any)
			if m["name"] == name {
				v, _ := m["value"].(string)
				return v, nil
			}
		}
	}
	return "", fmt.Errorf("the application's sync operation has no info item %q", name)
}

// repoURLToHTTPS is a repository URL as an https URL without .git (for links).
func repoURLToHTTPS(raw string) string {
	host, path, ok := hostPath(raw)
	if !ok {
		return raw
	}
	return "https://" + host + "/" + path
}

// fullNameByRepoURL is the repository's path (owner/name).
func fullNameByRepoURL(raw string) string {
	_, path, ok := hostPath(raw)
	if !ok {
		return ""
	}
	return path
}

func hostPath(raw string) (host, path string, ok bool) {
	n, err := repourl.Normalize(raw)
	if err != nil {
		return "", "", false
	}
	u, err := url.Parse(n)
	if err != nil || u.Host == "" {
		return "", "", false
	}
	return u.Hostname(), strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git"), true
}
