package events

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// The amqp event source (Argo's AMQPEventSource): a queue bound to an exchange of an AMQP
// 0-9-1 broker (RabbitMQ), consumed by the runtime.

// AMQPSource consumes messages routed from an exchange of an AMQP broker.
type AMQPSource struct {
	// URL (amqp:// or amqps://, credentials in it or in auth), or URLSecret: exactly one.
	URL               string                     `json:"url,omitempty"`
	URLSecret         *SecretKeySelector         `json:"urlSecret,omitempty"`
	ExchangeName      string                     `json:"exchangeName"`
	ExchangeType      string                     `json:"exchangeType"`
	RoutingKey        string                     `json:"routingKey"`
	ConnectionBackoff *Backoff                   `json:"connectionBackoff,omitempty"`
	JSONBody          bool                       `json:"jsonBody,omitempty"`
	TLS               *TLSConfig                 `json:"tls,omitempty"`
	Metadata          map[string]string          `json:"metadata,omitempty"`
	ExchangeDeclare   *AMQPExchangeDeclareConfig `json:"exchangeDeclare,omitempty"`
	QueueDeclare      *AMQPQueueDeclareConfig    `json:"queueDeclare,omitempty"`
	QueueBind         *AMQPQueueBindConfig       `json:"queueBind,omitempty"`
	Consume           *AMQPConsumeConfig         `json:"consume,omitempty"`
	Auth              *BasicAuth                 `json:"auth,omitempty"`
	Filter            *EventSourceFilter         `json:"filter,omitempty"`
}

// AMQPExchangeDeclareConfig is how the exchange is declared (Argo's default: durable).
type AMQPExchangeDeclareConfig struct {
	Durable    bool `json:"durable,omitempty"`
	AutoDelete bool `json:"autoDelete,omitempty"`
	Internal   bool `json:"internal,omitempty"`
	NoWait     bool `json:"noWait,omitempty"`
}

// AMQPQueueDeclareConfig is how the queue is declared (Argo's default: a server-named,
// exclusive queue). Arguments are the queue's x-arguments, as YAML.
type AMQPQueueDeclareConfig struct {
	Name       string `json:"name,omitempty"`
	Durable    bool   `json:"durable,omitempty"`
	AutoDelete bool   `json:"autoDelete,omitempty"`
	Exclusive  bool   `json:"exclusive,omitempty"`
	NoWait     bool   `json:"noWait,omitempty"`
	Arguments  string `json:"arguments,omitempty"`
}

// AMQPQueueBindConfig is how the queue is bound to the exchange.
type AMQPQueueBindConfig struct {
	NoWait bool `json:"noWait,omitempty"`
}

// AMQPConsumeConfig is how the queue is consumed (Argo's default: autoAck).
type AMQPConsumeConfig struct {
	ConsumerTag string `json:"consumerTag,omitempty"`
	AutoAck     bool   `json:"autoAck,omitempty"`
	Exclusive   bool   `json:"exclusive,omitempty"`
	NoLocal     bool   `json:"noLocal,omitempty"`
	NoWait      bool   `json:"noWait,omitempty"`
}

// Bounds of an amqp source.
const (
	maxAMQPName      = 255 // AMQP's short strings
	maxAMQPArguments = 16 << 10
	amqpHeartbeat    = 10 * time.Second
	amqpDialTimeout  = 30 * time.Second
)

// amqpFileParams are URL query parameters that make the client read files of the runtime's
// machine: a tenant's URL must not.
var amqpFileParams = []string{"certfile", "keyfile", "cacertfile"}

func validateAMQP(f string, a AMQPSource) error {
	switch {
	case a.URL == "" && a.URLSecret == nil:
		return errdefs.Invalid(f+".url", "", "is required (amqp://host:5672/vhost, or amqps://), or urlSecret: a Secret key holding it")
	case a.URL != "" && a.URLSecret != nil:
		return errdefs.Invalid(f+".urlSecret", a.URLSecret.Name, "is given with url: give one of them")
	case a.ExchangeName == "":
		return errdefs.Invalid(f+".exchangeName", "", "is required: the exchange the queue is bound to (declared if it does not exist)")
	case len(a.ExchangeName) > maxAMQPName || strings.HasPrefix(a.ExchangeName, "amq."):
		return errdefs.Invalid(f+".exchangeName", a.ExchangeName, "is not an exchange this source may declare: at most 255 bytes, not starting with amq. (reserved by the broker)")
	case a.ExchangeType == "":
		return errdefs.Invalid(f+".exchangeType", "", "is required: direct, fanout, topic or headers (or a plugin's x- type)")
	case !amqpExchangeType(a.ExchangeType):
		return errdefs.Invalid(f+".exchangeType", a.ExchangeType, "is not an exchange type: direct, fanout, topic or headers (or a plugin's x- type)")
	case a.RoutingKey == "":
		return errdefs.Invalid(f+".routingKey", "", "is required: the binding's routing key (e.g. orders.created, orders.# with a topic exchange; any value with fanout)")
	case len(a.RoutingKey) > maxAMQPName:
		return errdefs.Invalid(f+".routingKey", a.RoutingKey, "is longer than 255 bytes")
	}
	if a.URL != "" {
		if err := checkAMQPURL(f+".url", a.URL); err != nil {
			return err
		}
	} else if err := checkSecretRef(f+".urlSecret", a.URLSecret); err != nil {
		return err
	}
	if q := a.QueueDeclare; q != nil {
		if len(q.Name) > maxAMQPName || strings.HasPrefix(q.Name, "amq.") {
			return errdefs.Invalid(f+".queueDeclare.name", q.Name, "is not a queue name this source may declare: at most 255 bytes, not starting with amq. (empty: the broker names it)")
		}
		if _, err := amqpArguments(f+".queueDeclare.arguments", q.Arguments); err != nil {
			return err
		}
	}
	if c := a.Consume; c != nil && len(c.ConsumerTag) > maxAMQPName {
		return errdefs.Invalid(f+".consume.consumerTag", c.ConsumerTag, "is longer than 255 bytes")
	}
	if _, err := compileBackoff(f+".connectionBackoff", a.ConnectionBackoff); err != nil {
		return err
	}
	if au := a.Auth; au != nil {
		if au.Username == nil || au.Password == nil {
			return errdefs.Invalid(f+".auth", "", "needs username and password (Secret keys)")
		}
		if err := checkSecretRef(f+".auth.username", au.Username); err != nil {
			return err
		}
		if err := checkSecretRef(f+".auth.password", au.Password); err != nil {
			return err
		}
	}
	if err := checkTLS(f+".tls", a.TLS); err != nil {
		return err
	}
	return checkSourceFilter(f+".filter", a.Filter)
}

func amqpExchangeType(t string) bool {
	switch t {
	case amqp.ExchangeDirect, amqp.ExchangeFanout, amqp.ExchangeTopic, amqp.ExchangeHeaders:
		return true
	}
	return strings.HasPrefix(t, "x-") && len(t) <= maxAMQPName && !strings.ContainsAny(t, " \t\r\n")
}

// checkAMQPURL checks a broker URL (field f; url or the urlSecret's value): amqp:// or
// amqps:// with a host, none of the query parameters that read local files.
func checkAMQPURL(f, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "amqp" && u.Scheme != "amqps") || u.Host == "" || u.Opaque != "" {
		return errdefs.Invalid(f, redact(raw), "is not a broker URL: amqp://[user:password@]host[:5672][/vhost] or amqps://")
	}
	for _, p := range amqpFileParams {
		if u.Query().Has(p) {
			return errdefs.Invalid(f, redact(raw), "names a file of the runtime's machine ("+p+"): give certificates in tls (Secret keys)")
		}
	}
	if _, err := amqp.ParseURI(raw); err != nil {
		return errdefs.Invalid(f, redact(raw), "is not a broker URL: "+strings.ReplaceAll(err.Error(), raw, redact(raw)))
	}
	return nil
}

// amqpArguments reads a queue's x-arguments (YAML, as Argo's queueDeclare.arguments) into an
// AMQP table: integers stay integers (x-message-ttl, x-max-length), maps become tables.
func amqpArguments(f, text string) (amqp.Table, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	if len(text) > maxAMQPArguments {
		return nil, errdefs.Invalid(f, "", fmt.Sprintf("is longer than %d bytes", maxAMQPArguments))
	}
	j, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, errdefs.Invalid(f, text, "is not YAML: "+err.Error())
	}
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil || m == nil {
		return nil, errdefs.Invalid(f, text, "is not a map of arguments, e.g. 'x-message-ttl: 60000' or '{x-queue-type: quorum}'")
	}
	t := amqpTable(m)
	if err := t.Validate(); err != nil {
		return nil, errdefs.Invalid(f, text, "holds a value AMQP cannot carry: "+err.Error())
	}
	return t, nil
}

func amqpTable(m map[string]any) amqp.Table {
	t := amqp.Table{}
	for k, v := range m {
		t[k] = amqpValue(v)
	}
	return t
}

func amqpValue(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		fv, _ := v.Float64()
		if math.IsInf(fv, 0) || math.IsNaN(fv) {
			return v.String()
		}
		return fv
	case map[string]any:
		return amqpTable(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = amqpValue(e)
		}
		return out
	}
	return v // string, bool, nil
}

// amqpDefaults are Argo's defaults of the declarations and the consumer.
func amqpDefaults(a *AMQPSource) (AMQPExchangeDeclareConfig, AMQPQueueDeclareConfig, AMQPQueueBindConfig, AMQPConsumeConfig) {
	ed, qd, qb, co := AMQPExchangeDeclareConfig{Durable: true}, AMQPQueueDeclareConfig{Exclusive: true}, AMQPQueueBindConfig{}, AMQPConsumeConfig{AutoAck: true}
	if a.ExchangeDeclare != nil {
		ed = *a.ExchangeDeclare
	}
	if a.QueueDeclare != nil {
		qd = *a.QueueDeclare
	}
	if a.QueueBind != nil {
		qb = *a.QueueBind
	}
	if a.Consume != nil {
		co = *a.Consume
	}
	return ed, qd, qb, co
}

// consumeAMQP connects to an amqp source's broker, declares its exchange and queue, binds and
// consumes them until ctx ends or the connection or channel closes. Without autoAck a
// message is acknowledged once the bus stored its event (or the filter dropped it), and
// returned to the queue when the bus did not.
func (c *Controller) consumeAMQP(ctx context.Context, e *emitter) error {
	a := e.l.amqp
	f := e.l.field()
	raw, shown := a.URL, redact(a.URL)
	if a.URLSecret != nil {
		u, err := c.readSecret(ctx, e.ns, *a.URLSecret)
		if err != nil {
			return fmt.Errorf("%s.urlSecret: %w", f, err)
		}
		raw, shown = u, "the URL in secret "+a.URLSecret.Name
		if checkAMQPURL(f+".urlSecret", u) != nil { // its text is not shown: it is a secret
			return fmt.Errorf("%s.urlSecret: secret %s key %s holds no broker URL (amqp:// or amqps://, without certfile, keyfile or cacertfile)", f, a.URLSecret.Name, a.URLSecret.Key)
		}
		pu, _ := url.Parse(u)
		if err := c.opts.Policy.CheckServerURL(f+".urlSecret", pu.Scheme+"://"+pu.Host); err != nil {
			return err
		}
	}
	uri, err := amqp.ParseURI(raw)
	if err != nil {
		return fmt.Errorf("%s is not a broker URL", shown)
	}
	cfg := amqp.Config{Heartbeat: amqpHeartbeat, Locale: "en_US", Properties: amqp.Table{"connection_name": "freshet " + e.key()}}
	if a.TLS != nil || uri.Scheme == "amqps" {
		t := &TLSConfig{}
		if a.TLS != nil {
			t = a.TLS
		}
		tc, err := c.tlsConfig(ctx, e.ns, f+".tls", t)
		if err != nil {
			return err
		}
		cfg.TLSClientConfig = tc
	}
	if au := a.Auth; au != nil {
		user, err := c.readSecret(ctx, e.ns, *au.Username)
		if err != nil {
			return fmt.Errorf("%s.auth.username: %w", f, err)
		}
		pw, err := c.readSecret(ctx, e.ns, *au.Password)
		if err != nil {
			return fmt.Errorf("%s.auth.password: %w", f, err)
		}
		cfg.SASL = []amqp.Authentication{&amqp.PlainAuth{Username: user, Password: pw}}
	}
	// Every connection goes through the operator's policy; TLS on top of it (amqps, or tls
	// with an amqp:// URL).
	cfg.Dial = func(network, addr string) (net.Conn, error) {
		dctx, cancel := context.WithTimeout(ctx, amqpDialTimeout)
		defer cancel()
		conn, err := c.opts.Policy.DialContext(dctx, network, addr)
		if err != nil {
			return nil, err
		}
		_ = conn.SetDeadline(time.Now().Add(amqpDialTimeout)) // the handshakes; cleared once open
		if uri.Scheme == "amqp" && cfg.TLSClientConfig != nil {
			tc := cfg.TLSClientConfig.Clone()
			if tc.ServerName == "" {
				tc.ServerName = uri.Host
			}
			t := tls.Client(conn, tc)
			if err := t.HandshakeContext(dctx); err != nil {
				conn.Close()
				return nil, err
			}
			return t, nil
		}
		return conn, nil
	}
	conn, err := amqp.DialConfig(raw, cfg)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", shown, err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("open a channel: %w", err)
	}
	ed, qd, qb, co := amqpDefaults(a)
	if err := ch.ExchangeDeclare(a.ExchangeName, a.ExchangeType, ed.Durable, ed.AutoDelete, ed.Internal, ed.NoWait, nil); err != nil {
		return fmt.Errorf("declare exchange %s of type %s: %w", a.ExchangeName, a.ExchangeType, err)
	}
	args, err := amqpArguments(f+".queueDeclare.arguments", qd.Arguments)
	if err != nil {
		return err
	}
	q, err := ch.QueueDeclare(qd.Name, qd.Durable, qd.AutoDelete, qd.Exclusive, qd.NoWait, args)
	if err != nil {
		return fmt.Errorf("declare queue %q: %w", qd.Name, err)
	}
	if err := ch.QueueBind(q.Name, a.RoutingKey, a.ExchangeName, qb.NoWait, nil); err != nil {
		return fmt.Errorf("bind queue %s to exchange %s with routing key %s: %w", q.Name, a.ExchangeName, a.RoutingKey, err)
	}
	deliveries, err := ch.Consume(q.Name, co.ConsumerTag, co.AutoAck, co.Exclusive, co.NoLocal, co.NoWait, nil)
	if err != nil {
		return fmt.Errorf("consume queue %s: %w", q.Name, err)
	}
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	e.connected()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-closed:
			if err != nil {
				return fmt.Errorf("the connection closed: %w", err)
			}
			return errors.New("the connection closed")
		case d, ok := <-deliveries:
			if !ok {
				return errors.New("the channel closed (the queue was deleted, or the broker closed it)")
			}
			data, err := amqpEventData(&d, a.JSONBody, a.Metadata)
			if err != nil {
				c.log.Warn("amqp message dropped", logKey, e.key(), logErr, err)
				if !co.AutoAck {
					_ = d.Reject(false) // never to be taken: not requeued
				}
				continue
			}
			id := ""
			if d.MessageId != "" {
				id = digestID("amqp", d.Exchange, d.MessageId)
			}
			done := e.emit(ctx, id, data)
			if co.AutoAck {
				continue
			}
			if done {
				_ = d.Ack(false)
			} else {
				_ = d.Nack(false, true)
			}
		}
	}
}

// amqpEventData is an AMQP delivery's event data, as Argo's AMQPEventData: its properties,
// exchange, routingKey, body (the message's JSON with jsonBody, else its bytes, base64) and
// metadata. A jsonBody message that is not JSON is refused.
func amqpEventData(d *amqp.Delivery, jsonBody bool, metadata map[string]string) ([]byte, error) {
	return json.Marshal(struct {
		ContentType     string            `json:"contentType"`
		ContentEncoding string            `json:"contentEncoding"`
		DeliveryMode    int               `json:"deliveryMode"`
		Priority        int               `json:"priority"`
		CorrelationID   string            `json:"correlationId"`
		ReplyTo         string            `json:"replyTo"`
		Expiration      string            `json:"expiration"`
		MessageID       string            `json:"messageId"`
		Timestamp       string            `json:"timestamp"`
		Type            string            `json:"type"`
		AppID           string            `json:"appId"`
		Exchange        string            `json:"exchange"`
		RoutingKey      string            `json:"routingKey"`
		Body            any               `json:"body"`
		Metadata        map[string]string `json:"metadata,omitempty"`
	}{d.ContentType, d.ContentEncoding, int(d.DeliveryMode), int(d.Priority), d.CorrelationId, d.ReplyTo, d.Expiration,
		d.MessageId, d.Timestamp.String(), d.Type, d.AppId, d.Exchange, d.RoutingKey, messageBody(d.Body, jsonBody), metadata})
}
