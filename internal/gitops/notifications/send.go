package notifications

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net/http"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/sender"
)

// Destination is one recipient of a service.
type Destination struct {
	Service   string `json:"service"`
	Recipient string `json:"recipient"`
}

func (d Destination) String() string { return d.Service + ":" + d.Recipient }

// transport is how notifications leave the runtime.
type transport struct {
	policy  *netpolicy.Policy
	rootCAs *x509.CertPool
	timeout time.Duration
}

// send delivers n to d through svc.
func (tr transport) send(ctx context.Context, svc *Service, n *Notification, d Destination) error {
	ctx, cancel := context.WithTimeout(ctx, tr.timeout)
	defer cancel()
	switch {
	case svc.Webhook != nil:
		return tr.webhook(ctx, svc, n)
	case svc.Slack != nil:
		return tr.slack(ctx, svc.Slack, n, d.Recipient)
	case svc.Email != nil:
		return tr.email(ctx, svc.Email, n, d.Recipient)
	}
	return sender.Permanentf(0, "service %s has no settings", svc.Name)
}

// webhook sends the template's request for this service (method GET and the message as body
// when the template has none, as Argo CD does).
func (tr transport) webhook(ctx context.Context, svc *Service, n *Notification) error {
	w := svc.Webhook
	method, body, target := http.MethodGet, n.Message, w.URL
	if wt, ok := n.Webhook[svc.Name]; ok {
		body = wt.Body
		if wt.Method != "" {
			method = wt.Method
		}
		if wt.Path != "" {
			target = strings.TrimRight(target, "/") + "/" + strings.TrimLeft(wt.Path, "/")
		}
	}
	h := http.Header{}
	for _, hd := range w.Headers {
		h.Set(hd.Name, hd.Value)
	}
	if h.Get("Content-Type") == "" && body != "" {
		h.Set("Content-Type", "application/json")
	}
	r := sender.Request{Method: method, URL: target, Body: []byte(body), Header: h}
	if w.BasicAuth != nil {
		r.Username, r.Password = w.BasicAuth.Username, w.BasicAuth.Password
	}
	_, _, err := sender.Do(ctx, tr.policy, r)
	return err
}

// slack posts chat.postMessage to the channel recipient.
func (tr transport) slack(ctx context.Context, s *SlackService, n *Notification, channel string) error {
	msg := map[string]any{"channel": channel, "text": n.Message}
	username, icon := s.Username, s.Icon
	if n.Slack != nil {
		if n.Slack.Username != "" {
			username = n.Slack.Username
		}
		if n.Slack.Icon != "" {
			icon = n.Slack.Icon
		}
		for _, p := range []struct{ key, v string }{{"attachments", n.Slack.Attachments}, {"blocks", n.Slack.Blocks}} {
			if strings.TrimSpace(p.v) == "" {
				continue
			}
			var v any
			if err := json.Unmarshal([]byte(p.v), &v); err != nil {
				return sender.Permanentf(0, "the template's slack.%s is not JSON: %v", p.key, err)
			}
			msg[p.key] = v
		}
	}
	if username != "" {
		msg["username"] = username
	}
	if icon != "" {
		if strings.HasPrefix(icon, ":") && strings.HasSuffix(icon, ":") {
			msg["icon_emoji"] = icon
		} else {
			msg["icon_url"] = icon
		}
	}
	if s.DisableUnfurl {
		msg["unfurl_links"], msg["unfurl_media"] = false, false
	}
	body, _ := json.Marshal(msg)
	u := strings.TrimRight(s.APIURL, "/") + "/chat.postMessage"
	h := http.Header{"Authorization": {"Bearer " + s.Token}, "Content-Type": {"application/json; charset=utf-8"}}
	_, answer, err := sender.Do(ctx, tr.policy, sender.Request{URL: u, Body: body, Header: h})
	if err != nil {
		return err
	}
	var res struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if json.Unmarshal(answer, &res) != nil {
		return sender.Permanentf(0, "the Slack API answered something other than its JSON")
	}
	if !res.OK {
		if res.Error == "ratelimited" {
			return sender.Temporaryf(0, "Slack: %s", res.Error)
		}
		return sender.Permanentf(0, "Slack: %s", oneLine(res.Error))
	}
	return nil
}

// email sends the notification to the comma-separated addresses in recipient.
func (tr transport) email(ctx context.Context, e *EmailService, n *Notification, recipient string) error {
	var to []string
	for _, a := range strings.Split(recipient, ",") {
		if a = strings.TrimSpace(a); a != "" {
			if !validAddress(a) {
				return sender.Permanentf(0, "the recipient %q is not an email address", oneLine(a))
			}
			to = append(to, a)
		}
	}
	if len(to) == 0 {
		return sender.Permanentf(0, "no email address to send to")
	}
	subject, text := "", n.Message
	if n.Email != nil {
		subject = n.Email.Subject
		if n.Email.Body != "" {
			text = n.Email.Body
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: %s\r\n", e.From)
	fmt.Fprintf(&b, "To: %s\r\n", strings.Join(to, ", "))
	fmt.Fprintf(&b, "Subject: %s\r\n", mime.QEncoding.Encode("utf-8", oneLine(subject)))
	fmt.Fprintf(&b, "Date: %s\r\n", time.Now().Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: <%s@freshet>\r\n", rand.Text())
	ct := "text/plain"
	if e.HTML {
		ct = "text/html"
	}
	fmt.Fprintf(&b, "MIME-Version: 1.0\r\nContent-Type: %s; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n", ct)
	qp := quotedprintable.NewWriter(&b)
	qp.Write([]byte(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", "\r\n")))
	qp.Close()
	srv := sender.Server{Host: e.Host, Port: e.Port, Username: e.Username, Password: e.Password, From: e.From, Security: e.Security}
	dial := sender.Dialer(tr.policy.DialContext)
	_, err := sender.SendMail(ctx, dial, tr.rootCAs, srv, to, b.Bytes())
	return err
}

// oneLine makes s fit in a header or a message: no control characters.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}
