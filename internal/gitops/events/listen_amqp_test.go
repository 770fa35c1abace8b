package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

const amqpES = esHead + `  amqp:
    orders:
      url: 'amqp://guest:guest@127.0.0.1:5672/'
      exchangeName: orders
      exchangeType: topic
      routingKey: 'orders.#'
      jsonBody: true
      exchangeDeclare: {durable: false, autoDelete: true}
      queueDeclare: {name: q1, exclusive: true, arguments: "x-message-ttl: 60000\nx-queue-mode: lazy"}
      consume: {consumerTag: t1, autoAck: false}
      connectionBackoff: {duration: 2s, factor: 1.5, jitter: 0.2, steps: 4}
      auth: {username: {name: mq, key: user}, password: {name: mq, key: pw}}
      filter: {expression: 'body.x == 1'}
  redisStream:
    jobs: {hostAddress: '127.0.0.1:6379', streams: [a, b], consumerGroup: cg, maxMsgCountPerRead: 5, password: {name: r, key: pw}}
`

// TestAMQPAndStreamDecode: Argo's fields of the amqp and redisStream sources decode, compile
// (connectionBackoff, queue arguments) and are listed.
func TestAMQPAndStreamDecode(t *testing.T) {
	es, err := DecodeEventSource(toJSON(t, amqpES))
	if err != nil {
		t.Fatal(err)
	}
	a := es.Spec.AMQP["orders"]
	if a.Consume == nil || a.Consume.AutoAck || a.Consume.ConsumerTag != "t1" || a.QueueDeclare.Name != "q1" || a.ExchangeDeclare.Durable {
		t.Errorf("amqp decoded %+v", a)
	}
	run, _, err := buildSource(es)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.listeners) != 2 {
		t.Fatalf("%d listeners", len(run.listeners))
	}
	for _, l := range run.listeners {
		switch l.typ {
		case "amqp":
			if b := l.backoff; b == nil || b.duration != 2*time.Second || b.factor != 1.5 || b.jitter != 0.2 || b.steps != 4 {
				t.Errorf("backoff %+v", l.backoff)
			}
		case "redisStream":
			if l.stream == nil || l.stream.ConsumerGroup != "cg" || l.backoff != nil {
				t.Errorf("redisStream listener %+v", l)
			}
		}
	}
	args, err := amqpArguments("f", a.QueueDeclare.Arguments)
	if err != nil || args["x-message-ttl"] != int64(60000) || args["x-queue-mode"] != "lazy" {
		t.Errorf("arguments %#v (%v)", args, err)
	}
	if err := checkPolicy(netpolicy.Unrestricted(), &es.Spec); err != nil {
		t.Error(err)
	}
	strict, err := netpolicy.Options{}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	err = checkPolicy(strict, &es.Spec)
	var fe *errdefs.FieldError
	if !errors.As(err, &fe) || fe.Field != "spec.amqp.orders.url" || strings.Contains(err.Error(), "guest:guest") {
		t.Errorf("strict policy: %v", err)
	}
}

// TestBackoff: Argo's defaults (1s, factor 1, jitter 1, 5 steps), its two duration spellings,
// and delays that grow by the factor within the jitter.
func TestBackoff(t *testing.T) {
	b, err := compileBackoff("f", &Backoff{})
	if err != nil || *b != (connBackoff{duration: time.Second, factor: 1, jitter: 1, steps: 5}) {
		t.Errorf("defaults %+v (%v)", b, err)
	}
	b, err = compileBackoff("f", &Backoff{Duration: json.RawMessage(`1000000`), Factor: json.RawMessage(`2`), Jitter: json.RawMessage(`0`), Steps: 3})
	if err != nil || b.duration != time.Millisecond {
		t.Fatalf("nanoseconds %+v (%v)", b, err)
	}
	for n, want := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond} {
		if got := b.delay(n + 1); got != want {
			t.Errorf("delay(%d) = %v, want %v", n+1, got, want)
		}
	}
	b, _ = compileBackoff("f", &Backoff{Duration: json.RawMessage(`"1s"`), Factor: json.RawMessage(`"1"`), Jitter: json.RawMessage(`0.5`)})
	for range 20 {
		if d := b.delay(3); d < time.Second || d > 1500*time.Millisecond {
			t.Fatalf("jittered delay %v out of [1s, 1.5s]", d)
		}
	}
	if d := (&connBackoff{duration: time.Hour, factor: 100}).delay(50); d != maxBackoffDelay {
		t.Errorf("a huge delay is %v, want the cap", d)
	}
}

// TestAMQPRefusals: a bad amqp or redisStream source is refused naming the field.
func TestAMQPRefusals(t *testing.T) {
	const ok = "url: 'amqp://h:5672', exchangeType: topic, routingKey: k"
	for _, tc := range []struct{ name, doc, field, want string }{
		{"no exchangeName", "  amqp: {a: {" + ok + "}}\n", "spec.amqp.a.exchangeName", "is required"},
		{"reserved exchange", "  amqp: {a: {" + ok + ", exchangeName: amq.topic}}\n", "spec.amqp.a.exchangeName", "amq."},
		{"no url", "  amqp: {a: {exchangeName: e, exchangeType: topic, routingKey: k}}\n", "spec.amqp.a.url", "is required"},
		{"url and secret", "  amqp: {a: {" + ok + ", exchangeName: e, urlSecret: {name: s, key: u}}}\n", "spec.amqp.a.urlSecret", "one of them"},
		{"bad url", "  amqp: {a: {url: 'http://u:pw@h:5672', exchangeName: e, exchangeType: topic, routingKey: k}}\n", "spec.amqp.a.url", "xxxxx"},
		{"no host", "  amqp: {a: {url: 'amqp://', exchangeName: e, exchangeType: topic, routingKey: k}}\n", "spec.amqp.a.url", "not a broker URL"},
		{"file param", "  amqp: {a: {url: 'amqps://h/?cacertfile=/etc/shadow', exchangeName: e, exchangeType: topic, routingKey: k}}\n", "spec.amqp.a.url", "cacertfile"},
		{"no type", "  amqp: {a: {url: 'amqp://h', exchangeName: e, routingKey: k}}\n", "spec.amqp.a.exchangeType", "is required"},
		{"bad type", "  amqp: {a: {url: 'amqp://h', exchangeName: e, exchangeType: round, routingKey: k}}\n", "spec.amqp.a.exchangeType", "direct, fanout"},
		{"no routing key", "  amqp: {a: {url: 'amqp://h', exchangeName: e, exchangeType: fanout}}\n", "spec.amqp.a.routingKey", "is required"},
		{"bad arguments", "  amqp: {a: {" + ok + ", exchangeName: e, queueDeclare: {arguments: '[1, 2]'}}}\n", "spec.amqp.a.queueDeclare.arguments", "map of arguments"},
		{"bad backoff", "  amqp: {a: {" + ok + ", exchangeName: e, connectionBackoff: {duration: soon}}}\n", "spec.amqp.a.connectionBackoff.duration", "not a duration"},
		{"bad factor", "  amqp: {a: {" + ok + ", exchangeName: e, connectionBackoff: {factor: -1}}}\n", "spec.amqp.a.connectionBackoff.factor", "between 0"},
		{"bad steps", "  amqp: {a: {" + ok + ", exchangeName: e, connectionBackoff: {steps: -2}}}\n", "spec.amqp.a.connectionBackoff.steps", "between 1"},
		{"half auth", "  amqp: {a: {" + ok + ", exchangeName: e, auth: {username: {name: s, key: u}}}}\n", "spec.amqp.a.auth", "password"},
		{"amqp tls half", "  amqp: {a: {" + ok + ", exchangeName: e, tls: {clientKeySecret: {name: s, key: k}}}}\n", "spec.amqp.a.tls", "both"},
		{"amqp filter", "  amqp: {a: {" + ok + ", exchangeName: e, filter: {expression: 'body.x =='}}}\n", "spec.amqp.a.filter.expression", "body.x"},
		{"stream host", "  redisStream: {s: {hostAddress: 'redis://x:6379', streams: [a]}}\n", "spec.redisStream.s.hostAddress", "host:port"},
		{"stream no streams", "  redisStream: {s: {hostAddress: 'x:6379'}}\n", "spec.redisStream.s.streams", "is required"},
		{"stream twice", "  redisStream: {s: {hostAddress: 'x:6379', streams: [a, a]}}\n", "spec.redisStream.s.streams[1]", "each once"},
		{"stream count", "  redisStream: {s: {hostAddress: 'x:6379', streams: [a], maxMsgCountPerRead: -1}}\n", "spec.redisStream.s.maxMsgCountPerRead", "between 1"},
		{"stream group", "  redisStream: {s: {hostAddress: 'x:6379', streams: [a], consumerGroup: 'a b'}}\n", "spec.redisStream.s.consumerGroup", "consumer group"},
		{"stream db", "  redisStream: {s: {hostAddress: 'x:6379', streams: [a], db: -1}}\n", "spec.redisStream.s.db", "0 or more"},
		{"same name", "  redis: {x: {hostAddress: 'x:6379', channels: [a]}}\n  redisStream: {x: {hostAddress: 'x:6379', streams: [a]}}\n", "spec.redisStream.x", "unique"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeEventSource(toJSON(t, esHead+tc.doc))
			var fe *errdefs.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a field error", err)
			}
			if fe.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v (field %s), want field %s and %q", err, fe.Field, tc.field, tc.want)
			}
			if strings.Contains(err.Error(), ":pw@") {
				t.Errorf("a password is in the message: %v", err)
			}
		})
	}
}

// TestAMQPAndStreamDataShapes: the event data is Argo's AMQPEventData and RedisStreamEventData.
func TestAMQPAndStreamDataShapes(t *testing.T) {
	d := &amqp.Delivery{ContentType: "application/json", DeliveryMode: 2, MessageId: "m-1", Exchange: "orders", RoutingKey: "orders.new",
		Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Body: []byte(`{"id":7}`)}
	b, err := amqpEventData(d, true, map[string]string{"k": "v"})
	want := `{"contentType":"application/json","contentEncoding":"","deliveryMode":2,"priority":0,"correlationId":"","replyTo":"","expiration":"","messageId":"m-1","timestamp":"2026-01-02 03:04:05 +0000 UTC","type":"","appId":"","exchange":"orders","routingKey":"orders.new","body":{"id":7},"metadata":{"k":"v"}}`
	if err != nil || string(b) != want {
		t.Errorf("amqp data\n%s\nwant\n%s (%v)", b, want, err)
	}
	d.Body = []byte("hi")
	if b, _ := amqpEventData(d, false, nil); !strings.Contains(string(b), `"body":"aGk="`) {
		t.Errorf("amqp bytes body %s", b)
	}
	if _, err := amqpEventData(d, true, nil); err == nil {
		t.Error("a jsonBody message that is not JSON was taken")
	}
	b, err = redisStreamEventData("jobs", "1-0", map[string]any{"job": "j-7"}, nil)
	if err != nil || string(b) != `{"stream":"jobs","message_id":"1-0","values":{"job":"j-7"}}` {
		t.Errorf("redisStream data %s (%v)", b, err)
	}
}

// testBus is a bus on the test NATS (127.0.0.1:4222 or FRESHET_TEST_NATS_URL) for tests of
// listeners without a cluster, and a consumer of what they publish.
func testBus(t *testing.T) (*busConn, func() *Event) {
	t.Helper()
	u := os.Getenv("FRESHET_TEST_NATS_URL")
	if u == "" {
		u = "nats://127.0.0.1:4222"
	}
	nc, err := nats.Connect(u, nats.Timeout(2*time.Second))
	if err != nil {
		t.Skipf("no NATS at %s: %v", u, err)
	}
	ns := fmt.Sprintf("unit-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	b, err := openBus(ctx, nc, true, ns, "default", "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.js.DeleteStream(context.Background(), b.stream)
		b.close()
	})
	cons, err := b.js.OrderedConsumer(ctx, b.stream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return b, func() *Event {
		t.Helper()
		m, err := cons.Next(jetstream.FetchMaxWait(15 * time.Second))
		if err != nil {
			t.Fatalf("no event on the bus: %v", err)
		}
		var ev Event
		if err := json.Unmarshal(m.Data(), &ev); err != nil {
			t.Fatal(err)
		}
		return &ev
	}
}

// testController is a controller without a cluster: enough for listeners whose specs read no
// Secret.
func testController(t *testing.T) *Controller {
	return &Controller{opts: Options{Policy: netpolicy.Unrestricted(), Now: time.Now}, log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
}

// TestAMQPConsumeRealBroker (FRESHET_TEST_AMQP=1: the RabbitMQ at 127.0.0.1:5672, or
// FRESHET_TEST_AMQP_URL): a message published to a topic exchange reaches the bus as the
// amqp source's event (JSON body, Argo's data, the filter applied), acknowledged once stored.
func TestAMQPConsumeRealBroker(t *testing.T) {
	url := amqpTestURL(t)
	b, next := testBus(t)
	c := testController(t)
	ex := fmt.Sprintf("freshet-unit-%d", time.Now().UnixNano())
	src := &AMQPSource{URL: url, ExchangeName: ex, ExchangeType: "topic", RoutingKey: "orders.*", JSONBody: true,
		ExchangeDeclare: &AMQPExchangeDeclareConfig{AutoDelete: true}, QueueDeclare: &AMQPQueueDeclareConfig{Exclusive: true, Arguments: "x-max-length: 100"},
		Consume: &AMQPConsumeConfig{AutoAck: false}, Metadata: map[string]string{"team": "a"}}
	l := &listener{typ: "amqp", event: "orders", amqp: src, filter: filterOf(&EventSourceFilter{Expression: `body.n != 0`})}
	e := &emitter{c: c, bus: b, ns: "unit", name: "mq", l: l}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.consumeAMQP(ctx, e) }()
	waitTrue(t, "the amqp source connected", l.wasConnected)
	pub := dialAMQP(t, url)
	ch, err := pub.Channel()
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{`{"n":0}`, `{"n":1}`} {
		if err := ch.PublishWithContext(ctx, ex, "orders.new", false, false, amqp.Publishing{ContentType: "application/json", MessageId: "m" + body[5:6], Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	ev := next()
	var data struct {
		Body       map[string]int    `json:"body"`
		RoutingKey string            `json:"routingKey"`
		Exchange   string            `json:"exchange"`
		MessageID  string            `json:"messageId"`
		Metadata   map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		t.Fatal(err)
	}
	if data.Body["n"] != 1 || data.RoutingKey != "orders.new" || data.Exchange != ex || data.MessageID != "m1" || data.Metadata["team"] != "a" || ev.Context.Type != "amqp" || ev.Context.Subject != "orders" {
		t.Errorf("event %+v data %s", ev.Context, ev.Data)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("consume ended with %v", err)
	}
}

// TestAMQPConnectionBackoff: a broker that refuses the connection (bad credentials) is tried
// connectionBackoff.steps times, then given up; the state says which source and why.
func TestAMQPConnectionBackoff(t *testing.T) {
	url := amqpTestURL(t)
	bad := strings.Replace(url, "guest:guest@", "guest:wrong@", 1)
	if bad == url {
		t.Skip("the test URL has no guest:guest credentials to spoil")
	}
	b, _ := testBus(t)
	c := testController(t)
	bo, err := compileBackoff("f", &Backoff{Duration: json.RawMessage(`"50ms"`), Factor: json.RawMessage(`2`), Jitter: json.RawMessage(`0`), Steps: 3})
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{typ: "amqp", event: "orders", backoff: bo,
		amqp: &AMQPSource{URL: bad, ExchangeName: "x", ExchangeType: "fanout", RoutingKey: "k"}}
	run := &sourceRun{listeners: []*listener{l}}
	if cond := run.connectedCondition(); cond.Status != "Unknown" {
		t.Errorf("before connecting: %+v", cond)
	}
	start := time.Now()
	c.runListener(context.Background(), &emitter{c: c, bus: b, ns: "unit", name: "mq", l: l})
	if el := time.Since(start); el < 150*time.Millisecond { // 50 ms + 100 ms between 3 attempts
		t.Errorf("gave up after %v: the backoff was not waited", el)
	}
	cond := run.connectedCondition()
	if cond.Status != "False" || !strings.Contains(cond.Message, "spec.amqp.orders: gave up after 3 attempts") || !strings.Contains(cond.Message, "403") {
		t.Errorf("condition %+v", cond)
	}
}

// TestRedisStreamRealServer (FRESHET_TEST_REDIS=1): an XADD to a stream reaches the bus as the
// redisStream source's event, read through the consumer group and acknowledged; a missing
// stream is an error naming it.
func TestRedisStreamRealServer(t *testing.T) {
	if os.Getenv("FRESHET_TEST_REDIS") != "1" {
		t.Skip("needs FRESHET_TEST_REDIS=1 and a Redis (127.0.0.1:6379 or FRESHET_TEST_REDIS_ADDR)")
	}
	addr := os.Getenv("FRESHET_TEST_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	b, next := testBus(t)
	c := testController(t)
	stream := fmt.Sprintf("freshet-unit-%d", time.Now().UnixNano())
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	t.Cleanup(func() { rc.Del(context.Background(), stream) })
	l := &listener{typ: "redisStream", event: "jobs", stream: &RedisStreamSource{HostAddress: addr, Streams: []string{stream}, ConsumerGroup: "g1"}}
	e := &emitter{c: c, bus: b, ns: "unit", name: "rs", l: l}
	err := c.readRedisStream(context.Background(), e)
	if err == nil || !strings.Contains(err.Error(), "stream "+stream+" does not exist") {
		t.Fatalf("a missing stream: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := rc.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []string{"job", "before"}}).Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.readRedisStream(ctx, e) }()
	waitTrue(t, "the redisStream source connected", l.wasConnected)
	id, err := rc.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []string{"job", "j-7"}}).Result()
	if err != nil {
		t.Fatal(err)
	}
	ev := next()
	want := fmt.Sprintf(`{"stream":%q,"message_id":%q,"values":{"job":"j-7"}}`, stream, id)
	if string(ev.Data) != want || ev.Context.Type != "redisStream" {
		t.Errorf("event %+v data %s, want %s", ev.Context, ev.Data, want)
	}
	waitTrue(t, "the entry acknowledged", func() bool {
		p, err := rc.XPending(ctx, stream, "g1").Result()
		return err == nil && p.Count == 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("read ended with %v", err)
	}
}

func amqpTestURL(t *testing.T) string {
	t.Helper()
	if os.Getenv("FRESHET_TEST_AMQP") != "1" {
		t.Skip("needs FRESHET_TEST_AMQP=1 and a RabbitMQ (amqp://guest:guest@127.0.0.1:5672/ or FRESHET_TEST_AMQP_URL)")
	}
	if u := os.Getenv("FRESHET_TEST_AMQP_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

func dialAMQP(t *testing.T, url string) *amqp.Connection {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func waitTrue(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
