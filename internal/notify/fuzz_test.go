package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// channelBody and subscriptionBody are the REST bodies (client.CreateNotificationChannelRequest,
// client.CreateNotificationSubscriptionRequest), decoded strictly as httpx does.
type channelBody struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	URL    string `json:"url"`
	Secret string `json:"secret"`
	SMTP   *struct {
		Host     string   `json:"host"`
		Port     int      `json:"port"`
		Username string   `json:"username"`
		Password string   `json:"password"`
		From     string   `json:"from"`
		To       []string `json:"to"`
		Security string   `json:"security"`
	} `json:"smtp"`
	Events      []string `json:"events"`
	Pipeline    string   `json:"pipeline"`
	Application string   `json:"application"`
}

// FuzzChannelBody: whatever a channel or subscription body holds, it is refused as invalid
// input naming a field, or accepted with: a known kind; a webhook or Slack URL that is http(s)
// with a host, no credentials, and not an address the operator's policy refuses; an email
// channel with a valid host and port, a known security mode, bare addresses and no password
// without TLS; secrets only in what is encrypted (the public settings never carry the
// secret, the Slack URL or the password), and a shown URL without its query. Subscriptions
// accepted name only known event kinds, each once.
func FuzzChannelBody(f *testing.F) {
	for _, s := range []string{
		`{"name":"ops","kind":"webhook","url":"https://hooks.example.com/x?token=abc","secret":"s3"}`,
		`{"name":"chat","kind":"slack","url":"https://hooks.slack.com/services/T/B/X"}`,
		`{"name":"mail","kind":"email","smtp":{"host":"smtp.example.com","port":587,"username":"u","password":"p","from":"a@b.example","to":["c@d.example"]}}`,
		`{"name":"mail","kind":"email","smtp":{"host":"[::1]","port":25,"from":"a@b.example","to":["c@d.example"],"security":"none"}}`,
		`{"name":"x","kind":"webhook","url":"http://127.0.0.1/","secret":"\u0000"}`,
		`{"name":"x","kind":"webhook","url":"http://user:pw@10.0.0.1:80/"}`,
		`{"name":"ch","events":["deployment","build-failed"],"pipeline":"web/ci","application":"shop"}`,
		`{"name":"ch","events":["deployment","deployment"]}`,
		`{"name":"x","kind":"email","smtp":{"host":"a..b","port":-1,"from":"Bob <b@c.example>","to":[]}}`,
	} {
		f.Add([]byte(s))
	}
	policy, err := netpolicy.Options{}.Policy()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b channelBody
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if dec.Decode(&b) != nil {
			return
		}
		spec := ChannelSpec{Name: b.Name, Kind: b.Kind, URL: b.URL, Secret: b.Secret}
		if b.SMTP != nil {
			m := b.SMTP
			spec.SMTP = &SMTP{Host: m.Host, Port: m.Port, Username: m.Username, Password: m.Password, From: m.From, To: m.To, Security: m.Security}
		}
		cfg, sec, err := validateChannel(spec, policy)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) == "" {
				t.Fatalf("refusal %v is not invalid input naming a field", err)
			}
		} else {
			public := encodeJSON(cfg)
			for _, s := range []string{sec.WebhookSecret, sec.SlackURL, sec.SMTPPassword} {
				if len(s) >= 4 && strings.Contains(public, s) {
					t.Fatalf("a secret %q is in the public settings %s", s, public)
				}
			}
			switch spec.Kind {
			case KindWebhook, KindSlack:
				u, perr := url.Parse(spec.URL)
				if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
					t.Fatalf("accepted URL %q", spec.URL)
				}
				if policy.CheckServerURL("url", spec.URL) != nil {
					t.Fatalf("accepted %q, which the policy refuses", spec.URL)
				}
				if spec.Kind == KindSlack && (cfg.URL != "" || sec.SlackURL != spec.URL) {
					t.Fatalf("a Slack URL is stored in clear: %+v", cfg)
				}
				if u.RawQuery != "" && strings.Contains(public, u.RawQuery) {
					t.Fatalf("the public settings %s carry the URL's query", public)
				}
				if spec.Kind == KindWebhook && (sec.WebhookURL != spec.URL || cfg.URL != maskURL(spec.URL)) {
					t.Fatalf("a webhook URL stored as %+v / %q", cfg, sec.WebhookURL)
				}
			case KindEmail:
				m := cfg.SMTP
				if m == nil || !validHost(m.Host) || m.Port < 1 || m.Port > 65535 || !slices.Contains([]string{SecurityStartTLS, SecurityTLS, SecurityNone}, m.Security) {
					t.Fatalf("accepted SMTP settings %+v", m)
				}
				if sec.SMTPPassword != "" && m.Security == SecurityNone {
					t.Fatal("a password is accepted without TLS")
				}
				if len(m.To) == 0 || len(m.To) > maxRecipients || strings.ContainsAny(m.From+strings.Join(m.To, ""), "<>\r\n") {
					t.Fatalf("accepted addresses %q %q", m.From, m.To)
				}
			default:
				t.Fatalf("accepted kind %q", spec.Kind)
			}
		}
		sp := SubscriptionSpec{Channel: b.Name, Events: b.Events, Pipeline: b.Pipeline, Application: b.Application}
		if err := validateSubscription(sp); err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) == "" {
				t.Fatalf("refusal %v is not invalid input naming a field", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, ev := range sp.Events {
			if !slices.Contains(EventKinds, ev) || seen[ev] {
				t.Fatalf("accepted events %q", sp.Events)
			}
			seen[ev] = true
		}
	})
}
