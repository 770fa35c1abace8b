package events_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/freshet-dev/freshet/internal/gitops/events"
)

func amqpURL(t *testing.T) string {
	t.Helper()
	if os.Getenv("FRESHET_TEST_AMQP") != "1" {
		t.Skip("needs FRESHET_TEST_AMQP=1 and a RabbitMQ (amqp://guest:guest@127.0.0.1:5672/ or FRESHET_TEST_AMQP_URL)")
	}
	if u := os.Getenv("FRESHET_TEST_AMQP_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

// TestAMQPSourceToTrigger (FRESHET_TEST_AMQP=1): a message published to a RabbitMQ exchange →
// the amqp EventSource (credentials from a Secret, JSON body, topic routing) → a Sensor's
// trigger records its routing key and a body field; the status says the source is connected;
// deleted, the source stops and its queue (autoDelete) goes.
func TestAMQPSourceToTrigger(t *testing.T) {
	url := amqpURL(t)
	e := newEnv(t)
	e.exoticBus()
	ex := "freshet-test-" + e.ns
	// The URL without credentials: they come from auth.
	bare := strings.Replace(url, "guest:guest@", "", 1)
	e.secret("mq", map[string]string{"user": "guest", "pw": "guest"})
	e.create(events.SensorsResource, recordSensor("orders", "broker", "orders", "routingKey", "body.id"))
	e.waitCondition(events.SensorsResource, "orders", events.CondDeployed, "True")
	e.create(events.EventSourcesResource, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: broker}
spec:
  amqp:
    orders:
      url: '%s'
      exchangeName: '%s'
      exchangeType: topic
      routingKey: 'orders.*'
      jsonBody: true
      exchangeDeclare: {autoDelete: true}
      queueDeclare: {name: '%s', autoDelete: true, arguments: 'x-max-length: 1000'}
      consume: {autoAck: false}
      auth: {username: {name: mq, key: user}, password: {name: mq, key: pw}}
      connectionBackoff: {duration: 1s, factor: 2, steps: 10}
`, bare, ex, ex))
	e.waitCondition(events.EventSourcesResource, "broker", events.CondDeployed, "True")
	msg := e.waitCondition(events.EventSourcesResource, "broker", events.CondSourcesConnected, "True")
	if !strings.Contains(msg, "1 event(s) connected") {
		t.Errorf("SourcesConnected message %q", msg)
	}
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor("the message recorded", 30*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ch.PublishWithContext(ctx, ex, "orders.new", false, false, amqp.Publishing{ContentType: "application/json", Body: []byte(`{"id":"o-42"}`)}); err != nil {
			return false, err.Error()
		}
		got := e.seen("orders")
		for _, s := range got {
			if s == [2]string{"orders.new", "o-42"} {
				return true, ""
			}
		}
		return false, fmt.Sprint(got)
	})
	e.deleteSource("broker")
	e.waitListeners(0)
	e.waitFor("the source's queue gone", 10*time.Second, func() (bool, string) {
		c2, err := conn.Channel()
		if err != nil {
			return false, err.Error()
		}
		defer c2.Close()
		_, err = c2.QueueDeclarePassive(ex, false, false, true, false, nil)
		return err != nil, "the queue is still there"
	})
}

// TestAMQPSourceNotConnected (FRESHET_TEST_AMQP=1): a broker that refuses the credentials →
// SourcesConnected False naming the event and the broker's answer, with no password in it;
// after connectionBackoff.steps attempts the source gives up and says so.
func TestAMQPSourceNotConnected(t *testing.T) {
	url := amqpURL(t)
	bad := strings.Replace(url, "guest:guest@", "guest:wrong-pw@", 1)
	if bad == url {
		t.Skip("the test URL has no guest:guest credentials to spoil")
	}
	e := newEnv(t)
	e.exoticBus()
	e.create(events.EventSourcesResource, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: refused}
spec:
  amqp:
    orders: {url: '%s', exchangeName: x, exchangeType: fanout, routingKey: any, connectionBackoff: {duration: 200ms, factor: 1, jitter: 0, steps: 3}}
`, bad))
	msg := e.waitCondition(events.EventSourcesResource, "refused", events.CondSourcesConnected, "False")
	if !strings.Contains(msg, "spec.amqp.orders") || strings.Contains(msg, "wrong-pw") {
		t.Errorf("SourcesConnected message %q", msg)
	}
	e.waitFor("the source gives up", 30*time.Second, func() (bool, string) {
		_, m := e.condition(events.EventSourcesResource, "refused", events.CondSourcesConnected)
		return strings.Contains(m, "spec.amqp.orders: gave up after 3 attempts") && strings.Contains(m, "403"), m
	})
	e.waitListeners(0)
}

// TestAMQPBadSpec: an amqp source without exchangeName, and one whose url is not a broker's,
// are refused in the status naming the field; nothing of them runs.
func TestAMQPBadSpec(t *testing.T) {
	e := newEnv(t)
	e.exoticBus()
	for name, tc := range map[string]struct{ spec, field string }{
		"no-exchange": {"{url: 'amqp://127.0.0.1:5672', exchangeType: topic, routingKey: k}", "spec.amqp.a.exchangeName"},
		"bad-url":     {"{url: 'http://u:secret-pw@127.0.0.1:5672', exchangeName: e, exchangeType: topic, routingKey: k}", "spec.amqp.a.url"},
	} {
		e.create(events.EventSourcesResource, "apiVersion: argoproj.io/v1alpha1\nkind: EventSource\nmetadata: {name: "+name+"}\nspec:\n  amqp:\n    a: "+tc.spec+"\n")
		msg := e.waitCondition(events.EventSourcesResource, name, events.CondSourcesProvided, "False")
		if !strings.Contains(msg, tc.field) || strings.Contains(msg, "secret-pw") {
			t.Errorf("%s: SourcesProvided message %q", name, msg)
		}
	}
	if n := e.ctrl.Listeners(); n != 0 {
		t.Errorf("%d listeners run for refused sources", n)
	}
}

// TestRedisStreamSourceToTrigger (FRESHET_TEST_REDIS=1): an XADD to a stream → the redisStream
// EventSource (a consumer group) → a Sensor's trigger records the stream and a field of the
// entry; the entry is acknowledged; a stream that does not exist yet is named in the status
// until it does.
func TestRedisStreamSourceToTrigger(t *testing.T) {
	if os.Getenv("FRESHET_TEST_REDIS") != "1" {
		t.Skip("needs FRESHET_TEST_REDIS=1 and a Redis (127.0.0.1:6379 or FRESHET_TEST_REDIS_ADDR)")
	}
	addr := os.Getenv("FRESHET_TEST_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	e := newEnv(t)
	e.exoticBus()
	stream := "freshet-test-stream." + e.ns
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	t.Cleanup(func() { rc.Del(context.Background(), stream) })
	e.create(events.SensorsResource, recordSensor("jobs", "streams", "jobs", "stream", "values.job"))
	e.waitCondition(events.SensorsResource, "jobs", events.CondDeployed, "True")
	e.create(events.EventSourcesResource, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: streams}
spec:
  redisStream:
    jobs: {hostAddress: '%s', streams: ['%s'], consumerGroup: freshet-test, maxMsgCountPerRead: 5}
`, addr, stream))
	msg := e.waitCondition(events.EventSourcesResource, "streams", events.CondSourcesConnected, "False")
	if !strings.Contains(msg, "spec.redisStream.jobs") || !strings.Contains(msg, "does not exist") {
		t.Errorf("SourcesConnected message %q", msg)
	}
	if err := rc.XAdd(e.ctx, &redis.XAddArgs{Stream: stream, Values: []string{"job", "first"}}).Err(); err != nil {
		t.Fatal(err)
	}
	e.waitCondition(events.EventSourcesResource, "streams", events.CondSourcesConnected, "True")
	e.waitFor("the entry recorded", 30*time.Second, func() (bool, string) {
		if err := rc.XAdd(e.ctx, &redis.XAddArgs{Stream: stream, Values: []string{"job", "j-7"}}).Err(); err != nil {
			return false, err.Error()
		}
		got := e.seen("jobs")
		for _, s := range got {
			if s == [2]string{stream, "j-7"} {
				return true, ""
			}
		}
		return false, fmt.Sprint(got)
	})
	e.waitFor("the entries acknowledged", 10*time.Second, func() (bool, string) {
		p, err := rc.XPending(e.ctx, stream, "freshet-test").Result()
		return err == nil && p.Count == 0, fmt.Sprint(p, err)
	})
	e.deleteSource("streams")
	e.waitListeners(0)
}
