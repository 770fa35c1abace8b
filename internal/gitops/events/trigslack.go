package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// DefaultSlackAPI is the base URL of Slack's Web API, where slack triggers post unless the
// operator sets another (Options.SlackAPI).
const DefaultSlackAPI = "https://slack.com/api"

// Bounds of the slack trigger.
const (
	slackTimeout     = 30 * time.Second
	maxSlackText     = 40000 // Slack truncates text beyond this
	maxSlackThreads  = 1000  // thread timestamps a Sensor remembers
	maxSlackResponse = 1 << 20
)

// SlackTrigger posts a message to a Slack channel (chat.postMessage), as Argo's.
type SlackTrigger struct {
	Parameters  []TriggerParameter `json:"parameters,omitempty"`
	SlackToken  *SecretKeySelector `json:"slackToken,omitempty"`
	Channel     string             `json:"channel,omitempty"`
	Message     string             `json:"message,omitempty"`
	Attachments string             `json:"attachments,omitempty"` // a JSON array, as a string
	Blocks      string             `json:"blocks,omitempty"`      // a JSON array, as a string
	Thread      SlackThread        `json:"thread,omitempty"`
	Sender      SlackSender        `json:"sender,omitempty"`
}

// SlackThread gathers the messages of one messageAggregationKey in a thread.
type SlackThread struct {
	MessageAggregationKey     string `json:"messageAggregationKey,omitempty"`
	BroadcastMessageToChannel bool   `json:"broadcastMessageToChannel,omitempty"`
}

// SlackSender is the name and icon the message shows.
type SlackSender struct {
	Username string `json:"username,omitempty"`
	Icon     string `json:"icon,omitempty"`
}

var slackEmojiRe = regexp.MustCompile(`^:[^:\s]+:$`)

func validateSlack(f string, s *SlackTrigger, deps map[string]bool, tparams bool) error {
	if s.SlackToken == nil {
		return errdefs.Invalid(f+".slackToken", "", "is required: the Secret key holding the Slack bot token (xoxb-…)")
	}
	if err := checkSecretRef(f+".slackToken", s.SlackToken); err != nil {
		return err
	}
	if err := checkParameters(f+".parameters", s.Parameters, deps); err != nil {
		return err
	}
	// Parameters may set what the template leaves empty; what is written is checked now.
	params := tparams || len(s.Parameters) > 0
	return checkSlackMessage(f, s, params)
}

// checkSlackMessage checks what parameters may set: once they are set, empty fields are
// errors too (params false).
func checkSlackMessage(f string, s *SlackTrigger, params bool) error {
	if strings.TrimPrefix(s.Channel, "#") == "" && !params {
		return errdefs.Invalid(f+".channel", s.Channel, "is required: the channel to post to (a name such as general or #general, or an ID)")
	}
	if len(s.Channel) > 200 || strings.ContainsAny(s.Channel, " \t\r\n,") {
		return errdefs.Invalid(f+".channel", s.Channel, "is not a Slack channel: a name such as general or #general, or an ID")
	}
	if s.Message == "" && s.Attachments == "" && s.Blocks == "" && !params {
		return errdefs.Invalid(f+".message", "", "is required: give message, attachments or blocks (as Argo)")
	}
	if len(s.Message) > maxSlackText {
		return errdefs.Invalid(f+".message", strconv.Itoa(len(s.Message))+" bytes", fmt.Sprintf("is longer than Slack takes (%d)", maxSlackText))
	}
	if _, err := slackArray(f+".attachments", s.Attachments, "an array of Slack attachments"); err != nil {
		return err
	}
	if _, err := slackArray(f+".blocks", s.Blocks, "an array of Slack blocks"); err != nil {
		return err
	}
	if ic := s.Sender.Icon; ic != "" && !slackEmojiRe.MatchString(ic) && checkHTTPURL(f+".sender.icon", ic) != nil {
		return errdefs.Invalid(f+".sender.icon", ic, "is not an icon: an emoji such as :robot_face: or an http(s) image URL")
	}
	return nil
}

// slackArray reads attachments or blocks: a JSON array of objects, written as a string (as
// Argo's fields are); empty is none.
func slackArray(f, s, what string) (json.RawMessage, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &items); err != nil {
		return nil, errdefs.Invalid(f, clip(s, 80), "is not "+what+" as a JSON string (e.g. '[{\"type\": \"section\", …}]')")
	}
	for i, it := range items {
		if it == nil {
			return nil, errdefs.Invalid(fmt.Sprintf("%s[%d]", f, i), "null", "is not an object")
		}
	}
	if len(items) == 0 {
		return nil, nil
	}
	return json.RawMessage(s), nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// slackMessage is the body of chat.postMessage.
type slackMessage struct {
	Channel        string          `json:"channel"`
	Text           string          `json:"text,omitempty"`
	Attachments    json.RawMessage `json:"attachments,omitempty"`
	Blocks         json.RawMessage `json:"blocks,omitempty"`
	Username       string          `json:"username,omitempty"`
	IconEmoji      string          `json:"icon_emoji,omitempty"`
	IconURL        string          `json:"icon_url,omitempty"`
	ThreadTS       string          `json:"thread_ts,omitempty"`
	ReplyBroadcast bool            `json:"reply_broadcast,omitempty"`
}

// buildSlackMessage makes the body of chat.postMessage from a trigger whose parameters are
// set; threadTS is the thread to answer in ("" for none).
func buildSlackMessage(s *SlackTrigger, threadTS string) (*slackMessage, error) {
	if err := checkSlackMessage("slack", s, false); err != nil {
		return nil, err
	}
	m := &slackMessage{Channel: strings.TrimPrefix(s.Channel, "#"), Text: s.Message, Username: s.Sender.Username}
	m.Attachments, _ = slackArray("slack.attachments", s.Attachments, "")
	m.Blocks, _ = slackArray("slack.blocks", s.Blocks, "")
	if ic := s.Sender.Icon; slackEmojiRe.MatchString(ic) {
		m.IconEmoji = ic
	} else if ic != "" {
		m.IconURL = ic
	}
	if threadTS != "" {
		m.ThreadTS, m.ReplyBroadcast = threadTS, s.Thread.BroadcastMessageToChannel
	}
	return m, nil
}

// slackThreads remembers, per channel and messageAggregationKey, the message that started
// the thread (as Argo's notifications engine: in memory, so a runtime restart or a change of
// the Sensor starts new threads).
type slackThreads struct {
	mu sync.Mutex
	ts map[string]string
}

func (s *slackThreads) get(k string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ts[k]
}

func (s *slackThreads) set(k, ts string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ts == nil {
		s.ts = map[string]string{}
	}
	if len(s.ts) >= maxSlackThreads {
		for old := range s.ts { // forget one: its key starts a new thread
			delete(s.ts, old)
			break
		}
	}
	s.ts[k] = ts
}

// slackTemporary are chat.postMessage errors that may pass (the others are refusals).
var slackTemporary = map[string]bool{"ratelimited": true, "internal_error": true, "fatal_error": true,
	"service_unavailable": true, "request_timeout": true, "team_added_to_org": true}

// fireSlack posts the trigger's message with chat.postMessage at the runtime's Slack API,
// authenticated with the token read from the Sensor's namespace.
func (c *Controller) fireSlack(ctx context.Context, cs *compiledSensor, t *compiledTrigger, s *SlackTrigger) (string, error) {
	if len(s.Parameters) > 0 {
		var ns SlackTrigger
		if err := withParams("slack.parameters", s, s.Parameters, t.have, &ns); err != nil {
			return "", permanentError{err}
		}
		s = &ns
	}
	key := ""
	if k := s.Thread.MessageAggregationKey; k != "" {
		key = strings.TrimPrefix(s.Channel, "#") + "\x00" + k
	}
	threadTS := ""
	if key != "" {
		threadTS = cs.slack.get(key)
	}
	msg, err := buildSlackMessage(s, threadTS)
	if err != nil {
		return "", permanentError{fmt.Errorf("once the parameters are set: %w", err)}
	}
	base := strings.TrimSuffix(c.opts.SlackAPI, "/")
	endpoint := base + "/chat.postMessage"
	if err := c.opts.Policy.CheckServerURL("slack (the runtime's Slack API URL)", shownURL(endpoint)); err != nil {
		return "", permanentError{err}
	}
	if s.SlackToken == nil {
		return "", permanentError{errdefs.Invalid("slack.slackToken", "", "is required")}
	}
	token, err := c.readSecret(ctx, cs.ns, *s.SlackToken)
	if err != nil {
		return "", fmt.Errorf("slack.slackToken: %w", err)
	}
	token = strings.TrimSpace(token)
	if !httpguts.ValidHeaderFieldValue(token) {
		return "", permanentError{fmt.Errorf("slack.slackToken: secret %s key %s holds no token (control characters or line breaks)", s.SlackToken.Name, s.SlackToken.Key)}
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return "", permanentError{err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return "", permanentError{fmt.Errorf("slack: %v", err)}
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+token)
	client := c.opts.Policy.HTTPClient(slackTimeout)
	defer client.CloseIdleConnections()
	shown := shownURL(endpoint)
	resp, err := client.Do(req)
	if err != nil {
		if netpolicy.IsRefused(err) {
			return "", permanentError{fmt.Errorf("slack: %s: %s", shown, netpolicy.Describe(err))}
		}
		return "", fmt.Errorf("slack: %s: %s", shown, netpolicy.Describe(err))
	}
	defer resp.Body.Close()
	var out struct {
		OK      bool   `json:"ok"`
		Error   string `json:"error"`
		Channel string `json:"channel"`
		TS      string `json:"ts"`
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxSlackResponse))
	decErr := dec.Decode(&out)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxSlackResponse))
	channel := msg.Channel
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return "", fmt.Errorf("slack: post to %s: %s answered %d (retried)", channel, shown, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return "", permanentError{fmt.Errorf("slack: post to %s: %s answered %d", channel, shown, resp.StatusCode)}
	case decErr != nil:
		return "", fmt.Errorf("slack: post to %s: the answer of %s is not Slack's: %v", channel, shown, decErr)
	case !out.OK:
		e := errors.New("slack: post to " + channel + ": " + strconv.Quote(out.Error))
		if slackTemporary[out.Error] {
			return "", e
		}
		return "", permanentError{e}
	}
	if key != "" && threadTS == "" && out.TS != "" {
		cs.slack.set(key, out.TS)
	}
	what := "posted to " + channel
	if threadTS != "" {
		what += " in thread " + threadTS
	}
	return what, nil
}

// slackAPIURL checks the operator's Slack API base URL.
func slackAPIURL(raw string) (string, error) {
	if raw == "" {
		return DefaultSlackAPI, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.User != nil {
		return "", errdefs.Invalid("slack API URL", shownURL(raw), "is not an http(s) base URL without user or query (default "+DefaultSlackAPI+")")
	}
	return strings.TrimSuffix(raw, "/"), nil
}
