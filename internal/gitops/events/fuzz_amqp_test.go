package events

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FuzzAMQPArguments: an amqp source's queueDeclare.arguments (YAML from git) become an AMQP
// table the client can send, or are refused naming the field; never a panic.
func FuzzAMQPArguments(f *testing.F) {
	for _, s := range []string{"x-message-ttl: 60000\nx-queue-type: quorum", "{a: [1, 2.5, {b: true}]}", "- 1", "a: 1e400", "a: !!binary aGk=", "", "a: {b: {c: null}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		tab, err := amqpArguments("spec.amqp.a.queueDeclare.arguments", text)
		if err != nil {
			var fe *errdefs.FieldError
			if !errors.As(err, &fe) || fe.Field != "spec.amqp.a.queueDeclare.arguments" {
				t.Fatalf("refusal names no field: %v", err)
			}
			return
		}
		if err := tab.Validate(); err != nil {
			t.Fatalf("an accepted table does not validate: %v", err)
		}
	})
}

// FuzzBackoff: a connectionBackoff (from git) compiles within its bounds, or is refused
// naming a field under it; its delays are never negative nor above the cap.
func FuzzBackoff(f *testing.F) {
	f.Add([]byte(`"1s"`), []byte(`2`), []byte(`0.5`), int32(3))
	f.Add([]byte(`1000000`), []byte(`"1.5"`), []byte(`null`), int32(0))
	f.Add([]byte(`"-1s"`), []byte(`1e308`), []byte(`NaN`), int32(-1))
	f.Fuzz(func(t *testing.T, d, factor, jitter []byte, steps int32) {
		b, err := compileBackoff("spec.amqp.a.connectionBackoff", &Backoff{Duration: d, Factor: factor, Jitter: jitter, Steps: steps})
		if err != nil {
			var fe *errdefs.FieldError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "spec.amqp.a.connectionBackoff.") {
				t.Fatalf("refusal names no field: %v", err)
			}
			return
		}
		if b.duration <= 0 || b.duration > maxBackoffDelay || b.steps < 1 || b.factor < 0 || b.jitter < 0 {
			t.Fatalf("out of bounds: %+v", b)
		}
		for _, n := range []int{1, 2, 10, 1000} {
			if dl := b.delay(n); dl < 0 || dl > maxBackoffDelay {
				t.Fatalf("delay(%d) = %v", n, dl)
			}
		}
	})
}

// FuzzAMQPEventData: an AMQP delivery (anyone who can publish to the exchange sends it)
// becomes event data that is JSON with its routing key, or — a jsonBody body that is not JSON
// — is refused; never a panic.
func FuzzAMQPEventData(f *testing.F) {
	f.Add("orders.new", "m-1", "application/json", []byte(`{"id":7}`), true)
	f.Add("k", "", "", []byte("\xff"), false)
	f.Add("k", "\x00", "x", []byte(`[1,`), true)
	f.Fuzz(func(t *testing.T, key, id, ctype string, body []byte, jsonBody bool) {
		d := &amqp.Delivery{RoutingKey: key, MessageId: id, ContentType: ctype, Body: body, Timestamp: time.Unix(0, 0)}
		data, err := amqpEventData(d, jsonBody, nil)
		if err != nil {
			if !jsonBody || json.Valid(body) && len(body) > 0 {
				t.Fatalf("message refused: %v", err)
			}
			return
		}
		var got struct {
			RoutingKey string `json:"routingKey"`
		}
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("data is not JSON: %s", data)
		}
		if utf8.ValidString(key) && got.RoutingKey != key {
			t.Fatalf("routing key %q became %q", key, got.RoutingKey)
		}
	})
}

// FuzzRedisStreamEventData: a stream entry (anyone who can XADD sends it) becomes event data
// that is JSON with its stream and id; never a panic.
func FuzzRedisStreamEventData(f *testing.F) {
	f.Add("jobs", "1-0", "job", "j-7")
	f.Add("\xff", "", "", "\x00")
	f.Fuzz(func(t *testing.T, stream, id, k, v string) {
		data, err := redisStreamEventData(stream, id, map[string]any{k: v}, nil)
		if err != nil {
			t.Fatalf("entry refused: %v", err)
		}
		var got struct {
			Stream string `json:"stream"`
			ID     string `json:"message_id"`
		}
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("data is not JSON: %s", data)
		}
		if utf8.ValidString(stream) && utf8.ValidString(id) && (got.Stream != stream || got.ID != id) {
			t.Fatalf("stream %q id %q became %+v", stream, id, got)
		}
	})
}
