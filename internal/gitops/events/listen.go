package events

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/notification"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/tidwall/gjson"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// Reconnection backoff of the sources that connect out: 1 s doubling to 1 min, started over
// once a connection has lasted a minute.
const (
	reconnectMin = time.Second
	reconnectMax = time.Minute
)

// listener is an event of a source that connects out (resource, nats, minio): it runs until
// ctx ends, connecting again with backoff when its server goes away.
type listener struct {
	typ, event string
	filter     *exprProgram
	resource   *resourceWatch
	nats       *NATSSource
	minio      *MinioSource
	redis      *RedisSource
	mqtt       *MQTTSource
	amqp       *AMQPSource
	stream     *RedisStreamSource
	sa         string // the EventSource's service account (resource)
	// backoff is the event's connectionBackoff (nil: Freshet's, forever).
	backoff *connBackoff
	state   connState
}

// emitter publishes one listener's events.
type emitter struct {
	c        *Controller
	bus      *busConn
	ns, name string
	l        *listener
}

func (e *emitter) key() string { return e.ns + "/" + e.name + "/" + e.l.event }

// emit publishes an event with data (unless the source's filter drops it), trying 3 times;
// it reports whether the event is done with (published or filtered out).
func (e *emitter) emit(ctx context.Context, id string, data []byte) bool {
	if e.l.filter != nil && !passes(e.l.filter, data) {
		return true
	}
	if id == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	ev := &Event{Context: EventContext{ID: id, Source: e.name, Subject: e.l.event, Type: e.l.typ, SpecVersion: "1.0",
		DataContentType: "application/json", Time: metav1.NewTime(e.c.opts.Now().UTC())}, Data: data}
	for attempt := range 3 {
		err := e.bus.publish(ctx, ev)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		e.c.log.Warn("event not published", logKey, e.key(), "attempt", attempt+1, logErr, err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(nakDelay(uint64(attempt + 1))):
		}
	}
	e.c.log.Error("event dropped: the bus did not store it", logKey, e.key(), "id", id)
	return false
}

// digestID is an event id from parts: the same parts, the same id, so that the bus
// deduplicates an event published twice (after a restart) within its window.
func digestID(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:16])
}

// runListener runs l until ctx ends. A connection that fails (or ends) is made again after
// the event's connectionBackoff, giving up after its steps; without one, after 1 s doubling
// to 1 min, forever (started over once a connection has lasted a minute). A connection that
// was up starts the count of attempts over.
func (c *Controller) runListener(ctx context.Context, e *emitter) {
	var connect func(context.Context) error
	switch {
	case e.l.resource != nil:
		connect = func(ctx context.Context) error { return c.watchResource(ctx, e) }
	case e.l.nats != nil:
		connect = func(ctx context.Context) error { return c.subscribeNATS(ctx, e) }
	case e.l.mqtt != nil:
		connect = func(ctx context.Context) error { return c.subscribeMQTT(ctx, e) }
	case e.l.redis != nil:
		connect = func(ctx context.Context) error { return c.subscribeRedis(ctx, e) }
	case e.l.amqp != nil:
		connect = func(ctx context.Context) error { return c.consumeAMQP(ctx, e) }
	case e.l.stream != nil:
		connect = func(ctx context.Context) error { return c.readRedisStream(ctx, e) }
	default:
		connect = func(ctx context.Context) error { return c.listenMinio(ctx, e) }
	}
	wait := reconnectMin
	for ctx.Err() == nil {
		start := time.Now()
		err := connect(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("the connection ended")
		}
		wasUp := e.l.wasConnected()
		if wasUp || time.Since(start) > reconnectMax {
			wait = reconnectMin
			e.l.state.mu.Lock()
			e.l.state.attempts = 0
			e.l.state.mu.Unlock()
		}
		b := e.l.backoff
		if b != nil {
			e.l.state.mu.Lock()
			n := e.l.state.attempts + 1
			e.l.state.mu.Unlock()
			if n >= b.steps {
				e.failed(err, true)
				c.log.Error("event source gave up connecting (connectionBackoff.steps)", logKey, e.key(), "attempts", n, logErr, err)
				return
			}
			wait = b.delay(n)
		}
		e.failed(err, false)
		c.log.Warn("event source disconnected; connecting again", logKey, e.key(), "in", wait, logErr, err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if b == nil {
			wait = min(wait*2, reconnectMax)
		}
	}
}

// watchResource watches a resource as the EventSource's service account until ctx ends
// (client-go's informer lists and watches again, with backoff, when the API server goes away).
func (c *Controller) watchResource(ctx context.Context, e *emitter) error {
	w := e.l.resource
	dyn, err := c.clientAs(e.ns, e.l.sa)
	if err != nil {
		return err
	}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, w.namespace, func(o *metav1.ListOptions) { o.LabelSelector = w.labels })
	inf := f.ForResource(w.gvr).Informer()
	start := c.opts.Now()
	handle := func(typ string, obj, old any) {
		e.connected()
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || !w.passes(typ, u, start, c.opts.Now()) {
			return
		}
		data, err := resourceEventData(typ, u, old, w)
		if err != nil {
			c.log.Warn("resource event dropped", logKey, e.key(), logErr, err)
			return
		}
		e.emit(ctx, digestID(typ, string(u.GetUID()), u.GetResourceVersion()), data)
	}
	var h cache.ResourceEventHandlerFuncs
	if w.types["ADD"] {
		h.AddFunc = func(obj any) { handle("ADD", obj, nil) }
	}
	if w.types["UPDATE"] {
		h.UpdateFunc = func(old, obj any) {
			ou, _ := old.(*unstructured.Unstructured)
			nu, _ := obj.(*unstructured.Unstructured)
			if ou != nil && nu != nil && ou.GetResourceVersion() == nu.GetResourceVersion() {
				e.connected() // a list again after a failed watch
				return
			}
			handle("UPDATE", obj, old)
		}
	}
	if w.types["DELETE"] {
		h.DeleteFunc = func(obj any) { handle("DELETE", obj, nil) }
	}
	if _, err := inf.AddEventHandler(h); err != nil {
		return err
	}
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		c.log.Warn("resource event source: watch failed; retrying", logKey, e.key(), "resource", w.gvr.String(), logErr, err)
		e.disconnected(fmt.Errorf("watch %s: %w", w.gvr.String(), err))
	})
	f.Start(ctx.Done())
	if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		e.connected()
	}
	<-ctx.Done()
	f.Shutdown()
	return nil
}

// passes applies a resource source's filter (the label selector is the watch's own).
func (w *resourceWatch) passes(typ string, u *unstructured.Unstructured, start, now time.Time) bool {
	if w.prefix != "" && !strings.HasPrefix(u.GetName(), w.prefix) {
		return false
	}
	created := u.GetCreationTimestamp().Time
	if w.after && eventTime(typ, u, now).Before(start) {
		return false
	}
	if !w.createdBy.IsZero() && created.After(w.createdBy) {
		return false
	}
	if len(w.fields) == 0 {
		return true
	}
	b, err := u.MarshalJSON()
	if err != nil {
		return false
	}
	for _, m := range w.fields {
		r := gjson.GetBytes(b, m.path)
		if !r.Exists() || m.re.MatchString(r.String()) == m.negate {
			return false
		}
	}
	return true
}

// eventTime is when a resource event happened, as Argo reckons it for afterStart: an ADD at
// the object's creation, a DELETE at its deletion (now when not set), an UPDATE at its last
// managed-fields update.
func eventTime(typ string, u *unstructured.Unstructured, now time.Time) time.Time {
	switch typ {
	case "DELETE":
		if d := u.GetDeletionTimestamp(); d != nil {
			return d.Time
		}
		return now
	case "UPDATE":
		t := u.GetCreationTimestamp().Time
		for _, mf := range u.GetManagedFields() {
			if mf.Time != nil && mf.Operation == metav1.ManagedFieldsOperationUpdate && mf.Time.After(t) {
				t = mf.Time.Time
			}
		}
		return t
	}
	return u.GetCreationTimestamp().Time
}

// resourceEventData is a resource event's data, as Argo publishes it: type, body, oldBody
// (UPDATE; null otherwise), group, version, resource and metadata.
func resourceEventData(typ string, u *unstructured.Unstructured, old any, w *resourceWatch) ([]byte, error) {
	var oldBody any
	if o, ok := old.(*unstructured.Unstructured); ok && o != nil {
		oldBody = o.Object
	}
	return json.Marshal(struct {
		Type     string            `json:"type"`
		Body     any               `json:"body"`
		OldBody  any               `json:"oldBody"`
		Group    string            `json:"group"`
		Version  string            `json:"version"`
		Resource string            `json:"resource"`
		Metadata map[string]string `json:"metadata,omitempty"`
	}{typ, u.Object, oldBody, w.gvr.Group, w.gvr.Version, w.gvr.Resource, w.metadata})
}

// policyDialer dials NATS servers through the operator's policy.
type policyDialer struct {
	ctx context.Context
	p   *netpolicy.Policy
}

func (d policyDialer) Dial(network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
	defer cancel()
	return d.p.DialContext(ctx, network, addr)
}

// natsOptions are the connection options of a NATS source: its TLS and credentials read
// now, dialing through the policy, reconnecting forever with backoff.
func (c *Controller) natsOptions(ctx context.Context, ns string, n *NATSSource) ([]nats.Option, error) {
	opts := []nats.Option{nats.Name("freshet-runtime-event-source"), nats.SetCustomDialer(policyDialer{ctx, c.opts.Policy}),
		nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectJitter(100*time.Millisecond, time.Second),
		nats.CustomReconnectDelay(func(attempts int) time.Duration {
			return min(reconnectMin<<min(attempts, 6), reconnectMax)
		})}
	if n.TLS != nil {
		cfg, err := c.tlsConfig(ctx, ns, "nats.tls", n.TLS)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Secure(cfg))
	}
	a := n.Auth
	if a == nil {
		return opts, nil
	}
	switch {
	case a.Basic != nil:
		u, err := c.readSecret(ctx, ns, *a.Basic.Username)
		if err != nil {
			return nil, err
		}
		p, err := c.readSecret(ctx, ns, *a.Basic.Password)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.UserInfo(u, p))
	case a.Token != nil:
		t, err := c.readSecret(ctx, ns, *a.Token)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Token(t))
	case a.NKey != nil:
		seed, err := c.readSecret(ctx, ns, *a.NKey)
		if err != nil {
			return nil, err
		}
		kp, err := nkeys.FromSeed([]byte(seed))
		if err != nil {
			return nil, fmt.Errorf("secret %s key %s is not an NKey seed", a.NKey.Name, a.NKey.Key)
		}
		pub, _ := kp.PublicKey()
		opts = append(opts, nats.Nkey(pub, kp.Sign))
	case a.Credential != nil:
		creds, err := c.readSecret(ctx, ns, *a.Credential)
		if err != nil {
			return nil, err
		}
		jwt, err := nkeys.ParseDecoratedJWT([]byte(creds))
		if err != nil {
			return nil, fmt.Errorf("secret %s key %s is not a NATS credentials file", a.Credential.Name, a.Credential.Key)
		}
		kp, err := nkeys.ParseDecoratedNKey([]byte(creds))
		if err != nil {
			return nil, fmt.Errorf("secret %s key %s is not a NATS credentials file", a.Credential.Name, a.Credential.Key)
		}
		opts = append(opts, nats.UserJWT(func() (string, error) { return jwt, nil }, kp.Sign))
	}
	return opts, nil
}

// subscribeNATS subscribes to a NATS source's subject until ctx ends; the NATS client
// reconnects (and subscribes again) by itself.
func (c *Controller) subscribeNATS(ctx context.Context, e *emitter) error {
	n := e.l.nats
	opts, err := c.natsOptions(ctx, e.ns, n)
	if err != nil {
		return err
	}
	closed := make(chan struct{})
	opts = append(opts, nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				c.log.Warn("nats event source disconnected; reconnecting", logKey, e.key(), logErr, err)
			}
			e.disconnected(err)
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) { e.disconnected(err) }),
		nats.ConnectHandler(func(*nats.Conn) { e.connected() }),
		nats.ReconnectHandler(func(*nats.Conn) { e.connected() }))
	if e.l.backoff != nil { // the first connection fails, to be tried again after the backoff
		opts = append(opts, nats.RetryOnFailedConnect(false))
	}
	nc, err := nats.Connect(n.URL, opts...)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", redact(n.URL), err)
	}
	handler := func(m *nats.Msg) {
		data, err := natsEventData(m.Subject, m.Header, m.Data, n.JSONBody, n.Metadata)
		if err != nil {
			c.log.Warn("nats message dropped", logKey, e.key(), logErr, err)
			return
		}
		e.emit(ctx, "", data)
	}
	if n.Queue != nil {
		_, err = nc.QueueSubscribe(n.Subject, *n.Queue, handler)
	} else {
		_, err = nc.Subscribe(n.Subject, handler)
	}
	if err != nil {
		nc.Close()
		<-closed
		return fmt.Errorf("subscribe to %s: %w", n.Subject, err)
	}
	if nc.IsConnected() {
		e.connected()
	}
	select {
	case <-ctx.Done():
		// Drain lets the handler finish (its publish ends with ctx) before the connection
		// closes; a connection that cannot drain (reconnecting) is closed.
		if err := nc.Drain(); err != nil {
			nc.Close()
		}
		<-closed
		return nil
	case <-closed:
		return errors.New("the connection was closed")
	}
}

// natsEventData is a NATS message's event data, as Argo publishes it: subject, body (the
// message's JSON with jsonBody, else its bytes, base64), header and metadata. A jsonBody
// message that is not JSON is refused.
func natsEventData(subject string, header nats.Header, body []byte, jsonBody bool, metadata map[string]string) ([]byte, error) {
	return json.Marshal(struct {
		Subject  string              `json:"subject"`
		Body     any                 `json:"body"`
		Header   map[string][]string `json:"header,omitempty"`
		Metadata map[string]string   `json:"metadata,omitempty"`
	}{subject, messageBody(body, jsonBody), header, metadata})
}

// messageBody is a message's body in event data: its JSON (with jsonBody) or its bytes.
func messageBody(b []byte, jsonBody bool) any {
	if jsonBody {
		if len(b) == 0 {
			return json.RawMessage("null")
		}
		return json.RawMessage(b)
	}
	return b
}

// listenMinio listens to a bucket's notifications until ctx ends or the server goes away
// (minio-go's stream reconnects by itself, with backoff, after a stream ends).
func (c *Controller) listenMinio(ctx context.Context, e *emitter) error {
	m := e.l.minio
	ak, err := c.readSecret(ctx, e.ns, *m.AccessKey)
	if err != nil {
		return err
	}
	sk, err := c.readSecret(ctx, e.ns, *m.SecretKey)
	if err != nil {
		return err
	}
	tr := c.opts.Policy.HTTPClient(0).Transport.(*http.Transport).Clone()
	if m.CACertificate != nil {
		cfg, err := c.tlsConfig(ctx, e.ns, "minio", &TLSConfig{CACertSecret: m.CACertificate})
		if err != nil {
			return err
		}
		tr.TLSClientConfig = cfg
	}
	cl, err := minio.New(m.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(ak, sk, ""), Secure: !m.Insecure,
		Region: m.Region, Transport: tr, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return err
	}
	var prefix, suffix string
	if m.Filter != nil {
		prefix, suffix = m.Filter.Prefix, m.Filter.Suffix
	}
	evs := m.Events
	if len(evs) == 0 {
		evs = defaultBucketEvents
	}
	// The listen request says nothing until a notification comes: the status says whether the
	// server takes the credentials and has the bucket (the listen goes on either way: keys
	// that may listen need not read the bucket).
	switch ok, err := cl.BucketExists(ctx, m.Bucket.Name); {
	case err != nil:
		e.disconnected(fmt.Errorf("bucket %s at %s: %w", m.Bucket.Name, m.Endpoint, err))
	case !ok:
		e.disconnected(fmt.Errorf("bucket %s at %s does not exist", m.Bucket.Name, m.Endpoint))
	default:
		e.connected()
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for info := range cl.ListenBucketNotification(lctx, m.Bucket.Name, prefix, suffix, evs) {
		if info.Err != nil { // the stream goes on after a line that does not decode, else it ends
			c.log.Warn("bucket notifications", logKey, e.key(), logErr, info.Err)
			e.disconnected(info.Err)
			continue
		}
		e.connected()
		data, id, err := minioEventData(info, m.Metadata)
		if err != nil {
			c.log.Warn("bucket notification dropped", logKey, e.key(), logErr, err)
			continue
		}
		e.emit(ctx, id, data)
	}
	return errors.New("the notification stream ended")
}

// defaultBucketEvents are the notifications of a minio source without events.
var defaultBucketEvents = []string{"s3:ObjectCreated:*", "s3:ObjectRemoved:*"}

// minioEventData is a bucket notification's event data, as Argo publishes it: the records
// (notification) and metadata; the id is the records' digest.
func minioEventData(info notification.Info, metadata map[string]string) ([]byte, string, error) {
	recs, err := json.Marshal(info.Records)
	if err != nil {
		return nil, "", err
	}
	data, err := json.Marshal(struct {
		Notification json.RawMessage   `json:"notification"`
		Metadata     map[string]string `json:"metadata,omitempty"`
	}{recs, metadata})
	return data, digestID(string(recs)), err
}

// subscribeRedis subscribes to a Redis source's channels until ctx ends; go-redis's PubSub
// connects again (and subscribes again) by itself when the server goes away.
func (c *Controller) subscribeRedis(ctx context.Context, e *emitter) error {
	r := e.l.redis
	cl, err := c.redisClient(ctx, e.ns, e.l.field(), r.HostAddress, r.DB, r.Username, r.Password, r.TLS)
	if err != nil {
		return err
	}
	defer cl.Close()
	ps := cl.Subscribe(ctx, r.Channels...)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		return fmt.Errorf("subscribe at %s: %w", r.HostAddress, err)
	}
	e.connected()
	ch := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return errors.New("the subscription ended")
			}
			data, err := redisEventData(m.Channel, m.Pattern, m.Payload, r.JSONBody, r.Metadata)
			if err != nil {
				c.log.Warn("redis message dropped", logKey, e.key(), logErr, err)
				continue
			}
			e.emit(ctx, "", data)
		}
	}
}

// redisEventData is a Redis message's event data, as Argo publishes it: channel, pattern,
// body (the payload's JSON with jsonBody, else the payload as a string) and metadata.
func redisEventData(channel, pattern, payload string, jsonBody bool, metadata map[string]string) ([]byte, error) {
	var body any = payload
	if jsonBody {
		body = messageBody([]byte(payload), true)
	}
	return json.Marshal(struct {
		Channel  string            `json:"channel"`
		Pattern  string            `json:"pattern"`
		Body     any               `json:"body"`
		Metadata map[string]string `json:"metadata,omitempty"`
	}{channel, pattern, body, metadata})
}

// subscribeMQTT subscribes to an MQTT source's topic until ctx ends; paho connects again by
// itself (1 s doubling to 1 min) and the topic is subscribed again on every connection.
func (c *Controller) subscribeMQTT(ctx context.Context, e *emitter) error {
	m := e.l.mqtt
	u, err := mqttURL("url", m.URL)
	if err != nil {
		return err
	}
	var tlsCfg *tls.Config
	if m.TLS != nil {
		if tlsCfg, err = c.tlsConfig(ctx, e.ns, "mqtt.tls", m.TLS); err != nil {
			return err
		}
	}
	secure := u.Scheme == "ssl" || u.Scheme == "tls" || u.Scheme == "mqtts"
	if secure && tlsCfg == nil {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	o := mqtt.NewClientOptions().AddBroker(m.URL).SetClientID(m.ClientID).SetCleanSession(true).
		SetAutoReconnect(true).SetConnectRetry(true).SetConnectRetryInterval(reconnectMin).SetMaxReconnectInterval(reconnectMax).
		SetConnectTimeout(10 * time.Second)
	if a := m.Auth; a != nil {
		user, err := c.readSecret(ctx, e.ns, *a.Username)
		if err != nil {
			return err
		}
		pw, err := c.readSecret(ctx, e.ns, *a.Password)
		if err != nil {
			return err
		}
		o.SetUsername(user).SetPassword(pw)
	}
	// Every connection goes through the operator's policy (and TLS on top of it).
	o.SetCustomOpenConnectionFn(func(uri *url.URL, _ mqtt.ClientOptions) (net.Conn, error) {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		port := uri.Port()
		if port == "" {
			port = "1883"
			if secure {
				port = "8883"
			}
		}
		conn, err := c.opts.Policy.DialContext(dctx, "tcp", net.JoinHostPort(uri.Hostname(), port))
		if err != nil || !secure {
			return conn, err
		}
		cfg := tlsCfg.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName = uri.Hostname()
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(dctx); err != nil {
			conn.Close()
			return nil, err
		}
		return tc, nil
	})
	handler := func(_ mqtt.Client, msg mqtt.Message) {
		data, err := mqttEventData(msg.Topic(), int(msg.MessageID()), msg.Payload(), m.JSONBody, m.Metadata)
		if err != nil {
			c.log.Warn("mqtt message dropped", logKey, e.key(), logErr, err)
			return
		}
		e.emit(ctx, "", data)
	}
	o.SetOnConnectHandler(func(cl mqtt.Client) {
		if t := cl.Subscribe(m.Topic, 0, handler); t.WaitTimeout(10*time.Second) && t.Error() != nil {
			c.log.Warn("mqtt event source: subscribe failed", logKey, e.key(), logErr, t.Error())
			e.disconnected(fmt.Errorf("subscribe to %s: %w", m.Topic, t.Error()))
			return
		}
		e.connected()
	})
	o.SetConnectionLostHandler(func(_ mqtt.Client, err error) {
		c.log.Warn("mqtt event source disconnected; reconnecting", logKey, e.key(), logErr, err)
		e.disconnected(err)
	})
	o.SetConnectionNotificationHandler(func(_ mqtt.Client, n mqtt.ConnectionNotification) {
		switch n := n.(type) {
		case mqtt.ConnectionNotificationFailed:
			e.disconnected(n.Reason)
		case mqtt.ConnectionNotificationBrokerFailed:
			e.disconnected(n.Reason)
		}
	})
	if e.l.backoff != nil { // the first connection fails, to be tried again after the backoff
		o.SetConnectRetry(false)
	}
	cl := mqtt.NewClient(o)
	t := cl.Connect() // with connect retry, it keeps trying until Disconnect
	if e.l.backoff != nil {
		select {
		case <-t.Done():
			if err := t.Error(); err != nil {
				return fmt.Errorf("connect to %s: %w", redact(m.URL), err)
			}
		case <-ctx.Done():
		}
	}
	<-ctx.Done()
	cl.Disconnect(250)
	return nil
}

// mqttEventData is an MQTT message's event data, as Argo publishes it: topic, messageId, body
// (the payload's JSON with jsonBody, else its bytes, base64) and metadata.
func mqttEventData(topic string, id int, payload []byte, jsonBody bool, metadata map[string]string) ([]byte, error) {
	return json.Marshal(struct {
		Topic     string            `json:"topic"`
		MessageID int               `json:"messageId"`
		Body      any               `json:"body"`
		Metadata  map[string]string `json:"metadata,omitempty"`
	}{topic, id, messageBody(payload, jsonBody), metadata})
}
