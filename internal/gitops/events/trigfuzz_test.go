package events

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FuzzSlackMessage: a slack trigger's fields, as an event's parameters may set them (channel,
// message, attachments and blocks as JSON strings, the sender's icon), make a chat.postMessage
// body or are refused naming the field — never a panic, never a body that is not JSON or
// whose attachments and blocks are not arrays of objects.
func FuzzSlackMessage(f *testing.F) {
	f.Add("#general", "hello", `[{"title": "a", "color": "#18be52"}]`, `[{"type": "section", "text": {"type": "mrkdwn", "text": "*hi*"}}]`, ":robot_face:", "1.2")
	f.Add("C0123", "", "", `[{"type": "divider"}]`, "https://example.com/i.png", "")
	f.Add("#", "x", "[null]", "{}", "robot", "")
	f.Add("a b", "x", `[1]`, `"s"`, "::", "ts")
	f.Fuzz(func(t *testing.T, channel, message, attachments, blocks, icon, thread string) {
		s := &SlackTrigger{Channel: channel, Message: message, Attachments: attachments, Blocks: blocks,
			Sender: SlackSender{Username: "u", Icon: icon}, Thread: SlackThread{MessageAggregationKey: "k", BroadcastMessageToChannel: true}}
		m, err := buildSlackMessage(s, thread)
		if err != nil {
			var fe *errdefs.FieldError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "slack.") {
				t.Fatalf("refusal names no field: %v", err)
			}
			return
		}
		if m.Channel == "" || strings.HasPrefix(m.Channel, "#") || strings.ContainsAny(m.Channel, " \n") {
			t.Fatalf("channel %q", m.Channel)
		}
		if m.Text == "" && m.Attachments == nil && m.Blocks == nil {
			t.Fatal("a message with nothing to post")
		}
		b, err := json.Marshal(m)
		if err != nil || !json.Valid(b) {
			t.Fatalf("body %s: %v", b, err)
		}
		for _, raw := range []json.RawMessage{m.Attachments, m.Blocks} {
			if raw == nil {
				continue
			}
			var items []map[string]any
			if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
				t.Fatalf("%s is not an array of objects: %v", raw, err)
			}
		}
		if (m.IconEmoji != "") == (m.IconURL != "") && icon != "" {
			t.Fatalf("icon %q made emoji %q, url %q", icon, m.IconEmoji, m.IconURL)
		}
		if thread == "" && (m.ThreadTS != "" || m.ReplyBroadcast) {
			t.Fatal("a thread without a thread timestamp")
		}
	})
}
