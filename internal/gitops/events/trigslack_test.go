package events

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// TestSlackTriggerDecode: Argo's slack trigger is read with its fields; what cannot post is
// refused naming the field.
func TestSlackTriggerDecode(t *testing.T) {
	s, err := DecodeSensor(toJSON(t, snHead+okDeps+`  triggers:
  - template:
      name: slack-trigger
      slack:
        slackToken: {name: slack-secret, key: token}
        channel: '#general'
        message: hello world
        attachments: '[{"title": "Attachment1!", "color": "#18be52"}]'
        blocks: '[{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}]'
        thread: {messageAggregationKey: abcdefg, broadcastMessageToChannel: true}
        sender: {username: Cool Robot, icon: ':robot_face:'}
        parameters: [{src: {dependencyName: d, dataKey: body.channel}, dest: channel}]
`))
	if err != nil {
		t.Fatal(err)
	}
	sl := s.Spec.Triggers[0].Template.Slack
	if sl == nil || sl.SlackToken.Key != "token" || !sl.Thread.BroadcastMessageToChannel || sl.Sender.Icon != ":robot_face:" || len(sl.Parameters) != 1 {
		t.Fatalf("slack decoded as %+v", sl)
	}
	for _, tc := range []struct{ name, slack, field, msg string }{
		{"no token", `{channel: c, message: m}`, "spec.triggers[0].template.slack.slackToken", "is required"},
		{"no channel", `{slackToken: {name: s, key: k}, message: m}`, "spec.triggers[0].template.slack.channel", "is required"},
		{"no text", `{slackToken: {name: s, key: k}, channel: c}`, "spec.triggers[0].template.slack.message", "message, attachments or blocks"},
		{"attachments", `{slackToken: {name: s, key: k}, channel: c, attachments: '{"a": 1}'}`, "spec.triggers[0].template.slack.attachments", "array of Slack attachments"},
		{"blocks", `{slackToken: {name: s, key: k}, channel: c, blocks: 'nope'}`, "spec.triggers[0].template.slack.blocks", "array of Slack blocks"},
		{"icon", `{slackToken: {name: s, key: k}, channel: c, message: m, sender: {icon: robot}}`, "spec.triggers[0].template.slack.sender.icon", "emoji"},
		{"channel", `{slackToken: {name: s, key: k}, channel: 'a b', message: m}`, "spec.triggers[0].template.slack.channel", "is not a Slack channel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeSensor(toJSON(t, snHead+okDeps+"  triggers:\n  - template:\n      name: s\n      slack: "+tc.slack+"\n"))
			if f := errdefs.Field(err); f != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v (field %q), want %s: …%s", err, f, tc.field, tc.msg)
			}
		})
	}
	// A parameter may set the channel the template leaves empty.
	if _, err := DecodeSensor(toJSON(t, snHead+okDeps+`  triggers:
  - template: {name: s, slack: {slackToken: {name: s, key: k}}}
    parameters: [{src: {dependencyName: d, dataKey: body.c}, dest: slack.channel}, {src: {dependencyName: d, dataKey: body.m}, dest: slack.message}]
`)); err != nil {
		t.Errorf("channel and message from template parameters: %v", err)
	}
}

type slackCall struct {
	auth, ctype, path string
	body              map[string]any
}

// slackAPI is a real HTTP server on loopback standing in for Slack's Web API: it records
// each call and answers with answer (a JSON body) and code.
func slackAPI(t *testing.T, code *int, answer *string) (*httptest.Server, func() []slackCall) {
	var mu sync.Mutex
	var calls []slackCall
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		mu.Lock()
		calls = append(calls, slackCall{r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.URL.Path, body})
		c, a := *code, *answer
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(c)
		_, _ = io.WriteString(w, a)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []slackCall {
		mu.Lock()
		defer mu.Unlock()
		return append([]slackCall(nil), calls...)
	}
}

// withSecret puts a Secret's key in the controller's cache of Secrets (the kube tests read
// real ones).
func withSecret(c *Controller, ns, name, key, v string) {
	c.secrets.mu.Lock()
	defer c.secrets.mu.Unlock()
	if c.secrets.m == nil {
		c.secrets.m = map[string]secretEntry{}
	}
	c.secrets.m[ns+"/"+name+"/"+key] = secretEntry{v: v, at: time.Now()}
}

// TestSlackTrigger: the message goes to chat.postMessage at the operator's Slack API URL (a
// real server on loopback), with the bot token as a Bearer header and a JSON body holding
// the channel and message the event's parameters set, the attachments, blocks and sender;
// the second message of a messageAggregationKey answers in the first one's thread. Slack's
// refusals fail the trigger for good, its rate limit and errors are retried; the runtime's
// URL policy refuses a loopback Slack API before anything is sent.
func TestSlackTrigger(t *testing.T) {
	code, answer := http.StatusOK, `{"ok": true, "channel": "C0123", "ts": "1700000000.000100"}`
	srv, calls := slackAPI(t, &code, &answer)
	c, err := New(&rest.Config{Host: "http://127.0.0.1:1"}, Options{SlackAPI: srv.URL + "/api/"})
	if err != nil {
		t.Fatal(err)
	}
	withSecret(c, "ns", "slack", "token", "xoxb-test-token")
	cs, ct := compiledOne(t, `  - template:
      name: notify
      slack:
        slackToken: {name: slack, key: token}
        channel: '#placeholder'
        message: placeholder
        attachments: '[{"title": "deploy", "color": "#18be52"}]'
        blocks: '[{"type": "section", "text": {"type": "mrkdwn", "text": "*hi*"}}]'
        thread: {messageAggregationKey: deploys, broadcastMessageToChannel: true}
        sender: {username: Freshet, icon: ':robot_face:'}
        parameters:
        - src: {dependencyName: d, dataTemplate: '#{{ .Input.body.path }}'}
          dest: channel
        - src: {dependencyName: d, dataKey: body.msg}
          dest: message
`)
	ctx := context.Background()
	what, err := c.fireSlack(ctx, cs, ct, ct.t.Template.Slack)
	if err != nil || what != "posted to deploy" {
		t.Fatalf("first post: %q, %v", what, err)
	}
	what, err = c.fireSlack(ctx, cs, ct, ct.t.Template.Slack)
	if err != nil || what != "posted to deploy in thread 1700000000.000100" {
		t.Fatalf("second post: %q, %v", what, err)
	}
	got := calls()
	if len(got) != 2 {
		t.Fatalf("%d calls", len(got))
	}
	first := got[0]
	if first.path != "/api/chat.postMessage" || first.auth != "Bearer xoxb-test-token" || !strings.HasPrefix(first.ctype, "application/json") {
		t.Errorf("request %s, Authorization %q, Content-Type %q", first.path, first.auth, first.ctype)
	}
	b := first.body
	att, _ := b["attachments"].([]any)
	blocks, _ := b["blocks"].([]any)
	if b["channel"] != "deploy" || b["text"] != "hi" || b["username"] != "Freshet" || b["icon_emoji"] != ":robot_face:" ||
		len(att) != 1 || len(blocks) != 1 || b["thread_ts"] != nil || b["reply_broadcast"] != nil {
		t.Errorf("first body %v", b)
	}
	if b := got[1].body; b["thread_ts"] != "1700000000.000100" || b["reply_broadcast"] != true {
		t.Errorf("second body %v: want the first's thread, broadcast", b)
	}

	var perm permanentError
	answer = `{"ok": false, "error": "channel_not_found"}`
	if _, err := c.fireSlack(ctx, cs, ct, ct.t.Template.Slack); !errors.As(err, &perm) || !strings.Contains(err.Error(), `"channel_not_found"`) {
		t.Errorf("channel_not_found: err = %v, want a permanent error naming it", err)
	}
	answer = `{"ok": false, "error": "ratelimited"}`
	if _, err := c.fireSlack(ctx, cs, ct, ct.t.Template.Slack); err == nil || errors.As(err, &perm) {
		t.Errorf("ratelimited: err = %v, want a temporary error", err)
	}
	code = http.StatusServiceUnavailable
	if _, err := c.fireSlack(ctx, cs, ct, ct.t.Template.Slack); err == nil || errors.As(err, &perm) || !strings.Contains(err.Error(), "503") {
		t.Errorf("503: err = %v, want a temporary error", err)
	}
	if _, err := c.fireSlack(ctx, cs, ct, ct.t.Template.Slack); err == nil || strings.Contains(err.Error(), "xoxb") {
		t.Errorf("an error shows the token: %v", err)
	}

	// The operator's policy applies to the Slack API URL as to a tenant's http trigger.
	public, _ := netpolicy.Options{}.Policy()
	pc, err := New(&rest.Config{Host: "http://127.0.0.1:1"}, Options{SlackAPI: srv.URL, Policy: public})
	if err != nil {
		t.Fatal(err)
	}
	withSecret(pc, "ns", "slack", "token", "xoxb-test-token")
	n := len(calls())
	if _, err := pc.fireSlack(ctx, cs, ct, ct.t.Template.Slack); !errors.As(err, &perm) || !strings.Contains(err.Error(), "Slack API URL") {
		t.Errorf("public-only policy: err = %v, want a permanent refusal of the Slack API URL", err)
	}
	if len(calls()) != n {
		t.Error("a request reached the Slack API the policy refuses")
	}

	if _, err := New(&rest.Config{Host: "http://127.0.0.1:1"}, Options{SlackAPI: "ftp://slack.example.com"}); err == nil {
		t.Error("an ftp Slack API URL was taken")
	}
}
