package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"
)

// Consumer defaults; each can be changed per subscription with a SubOption.
const (
	// DefaultAckWait is how long the server waits for an ack before redelivering. A handler that
	// runs longer is kept alive with progress acks, so this only matters when a process dies.
	DefaultAckWait = 30 * time.Second
	// DefaultMaxDeliver bounds deliveries of one message; after the last failed one it is logged
	// and terminated.
	DefaultMaxDeliver = 8
	// DefaultFetchBatch is how many messages one pull request asks for while there is a backlog.
	DefaultFetchBatch = 10
	// DefaultBackoffMin is the redelivery delay after the first failure; it doubles per delivery.
	DefaultBackoffMin = time.Second
	// DefaultBackoffMax caps the redelivery delay.
	DefaultBackoffMax = 2 * time.Minute

	// maxFetchBatch bounds WithFetchBatch.
	maxFetchBatch = 256
	// minAckWait bounds WithAckWait from below; progress acks are sent every AckWait/3.
	minAckWait = 100 * time.Millisecond
	// idleWait is how long an idle pull request waits for a message before a new one is sent. It
	// also bounds how long Stop waits for an idle subscription (see run).
	idleWait = time.Second
	// fetchRetryMin and fetchRetryMax bound the pause after a failed pull request.
	fetchRetryMin = 100 * time.Millisecond
	fetchRetryMax = 5 * time.Second
	// ackTimeout bounds waiting for the server to confirm an ack.
	ackTimeout = 5 * time.Second
	// maxTermReason bounds the reason attached to a terminated message's advisory.
	maxTermReason = 256
)

var (
	// ErrMalformed wraps the error for a payload that does not decode into the handler's type.
	// Such a message is logged and terminated, never redelivered.
	ErrMalformed = errors.New("malformed payload")
	// ErrInvalidDurable is returned by Subscribe for an unusable durable name.
	ErrInvalidDurable = errors.New("invalid durable name")
)

// Message is one delivery of a typed event.
type Message[T any] struct {
	Subject string
	// Key is the idempotency key the event was published with ("" if the publisher set none).
	Key  string
	Data T
	// Delivered counts deliveries of this message to the consumer, starting at 1.
	Delivered int
	// Published is when the stream stored the event.
	Published time.Time
}

// Ledger records which messages a consumer has processed. Once runs fn unless (consumer, key) is
// already recorded, and records it only if fn succeeds, atomically with fn's changes (the store
// implements it as one SQL transaction). Once returns nil for an already recorded key, and fn's
// error, or its own, otherwise.
type Ledger interface {
	Once(ctx context.Context, consumer, key string, fn func(ctx context.Context) error) error
}

// Permanent marks err as not worth retrying: the message is terminated at once instead of being
// redelivered. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or an error it wraps, was made by Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// SubOption changes a subscription's defaults.
type SubOption func(*subConfig)

// WithLedger handles each message through l.Once(ctx, durable, key, ...), so a redelivered message
// changes nothing twice. A message published without a key uses "seq:<stream sequence>".
func WithLedger(l Ledger) SubOption { return func(c *subConfig) { c.ledger = l } }

// WithMaxDeliver bounds deliveries of one message (default DefaultMaxDeliver).
func WithMaxDeliver(n int) SubOption { return func(c *subConfig) { c.maxDeliver = n } }

// WithAckWait sets how long the server waits for an ack before redelivering (default DefaultAckWait).
func WithAckWait(d time.Duration) SubOption { return func(c *subConfig) { c.ackWait = d } }

// WithBackoff sets the redelivery delay after a failure: min after the first delivery, doubling up
// to max, with jitter (defaults DefaultBackoffMin, DefaultBackoffMax).
func WithBackoff(min, max time.Duration) SubOption {
	return func(c *subConfig) { c.backoffMin, c.backoffMax = min, max }
}

// WithFetchBatch sets how many messages one pull request asks for while there is a backlog
// (default DefaultFetchBatch).
// Messages of a batch are handled one after another; one that waits longer than AckWait behind a
// slow handler may be redelivered elsewhere, which a Ledger makes harmless.
func WithFetchBatch(n int) SubOption { return func(c *subConfig) { c.batch = n } }

type subConfig struct {
	ledger                 Ledger
	maxDeliver             int
	ackWait                time.Duration
	backoffMin, backoffMax time.Duration
	batch                  int
}

func newSubConfig(opts []SubOption) (subConfig, error) {
	c := subConfig{
		maxDeliver: DefaultMaxDeliver,
		ackWait:    DefaultAckWait,
		backoffMin: DefaultBackoffMin,
		backoffMax: DefaultBackoffMax,
		batch:      DefaultFetchBatch,
	}
	for _, o := range opts {
		o(&c)
	}
	var errs []error
	if c.maxDeliver < 1 {
		errs = append(errs, fmt.Errorf("%w: MaxDeliver = %d: must be at least 1", ErrInvalidOptions, c.maxDeliver))
	}
	if c.ackWait < minAckWait {
		errs = append(errs, fmt.Errorf("%w: AckWait = %s: must be at least %s", ErrInvalidOptions, c.ackWait, minAckWait))
	}
	if c.backoffMin <= 0 || c.backoffMax < c.backoffMin {
		errs = append(errs, fmt.Errorf("%w: Backoff = %s..%s: want 0 < min <= max", ErrInvalidOptions, c.backoffMin, c.backoffMax))
	}
	if c.batch < 1 || c.batch > maxFetchBatch {
		errs = append(errs, fmt.Errorf("%w: FetchBatch = %d: must be between 1 and %d", ErrInvalidOptions, c.batch, maxFetchBatch))
	}
	return c, errors.Join(errs...)
}

// nakDelay is the redelivery delay after the delivered-th delivery failed: backoffMin doubled per
// earlier delivery, capped at backoffMax, then jittered into [d/2, d].
func (c subConfig) nakDelay(delivered int) time.Duration {
	d := c.backoffMin
	for i := 1; i < delivered && d < c.backoffMax; i++ {
		d *= 2
	}
	d = min(d, c.backoffMax)
	return d/2 + rand.N(d/2+1)
}

// Subscription is a running durable consumer.
type Subscription struct {
	bus     *Bus
	durable string
	subject string
	cfg     subConfig
	cancel  context.CancelFunc
	done    chan struct{}
}

// delivery is a received message, before decoding.
type delivery struct {
	subject   string
	key       string
	data      []byte
	delivered int
	published time.Time
	seq       uint64
}

// ledgerKey is the key recorded in the Ledger: the idempotency key, or the stream sequence for a
// message published without one (a redelivery keeps its sequence).
func (d delivery) ledgerKey() string {
	if d.key != "" {
		return d.key
	}
	return "seq:" + strconv.FormatUint(d.seq, 10)
}

// Subscribe creates (or updates) the durable pull consumer durable on the subject filter
// (wildcards allowed) and hands each message to h, one at a time, at least once:
//   - nil acks;
//   - an error naks with backoff; after the last of MaxDeliver deliveries the message is logged
//     and terminated;
//   - a Permanent error, or a payload that does not decode into T, terminates at once.
//
// With WithLedger, h runs inside Ledger.Once(ctx, durable, key, ...). Subscriptions on the same
// durable, in this process or another, share the work. A new durable starts at the oldest event
// in the stream. ctx governs the subscription: cancelling it stops fetching and cancels the
// context handed to h. h must not call Stop on its own subscription.
func Subscribe[T any](ctx context.Context, b *Bus, durable, subject string, h func(context.Context, Message[T]) error, opts ...SubOption) (*Subscription, error) {
	if !validName(durable) {
		return nil, fmt.Errorf("subscribe %s: %w %q: use letters, digits, '-' and '_' only", subject, ErrInvalidDurable, durable)
	}
	if err := checkSubject(subject, true); err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", durable, err)
	}
	if h == nil {
		return nil, fmt.Errorf("subscribe %s: %w: nil handler", durable, ErrInvalidOptions)
	}
	cfg, err := newSubConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", durable, err)
	}
	if b.isClosing() {
		return nil, fmt.Errorf("subscribe %s: %w", durable, ErrClosed)
	}
	cons, err := b.js.CreateOrUpdateConsumer(ctx, b.opts.Stream, jetstream.ConsumerConfig{
		Durable:       durable,
		Description:   "freshet bus consumer",
		FilterSubject: subject,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.ackWait,
		MaxDeliver:    cfg.maxDeliver,
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: create consumer on %s: %w", durable, subject, err)
	}

	handle := func(ctx context.Context, d delivery) error {
		var v T
		if err := json.Unmarshal(d.data, &v); err != nil {
			return Permanent(fmt.Errorf("%w: decode into %T: %w", ErrMalformed, v, err))
		}
		m := Message[T]{Subject: d.subject, Key: d.key, Data: v, Delivered: d.delivered, Published: d.published}
		if cfg.ledger == nil {
			return h(ctx, m)
		}
		return cfg.ledger.Once(ctx, durable, d.ledgerKey(), func(ctx context.Context) error { return h(ctx, m) })
	}

	runCtx, cancel := context.WithCancel(ctx)
	s := &Subscription{bus: b, durable: durable, subject: subject, cfg: cfg, cancel: cancel, done: make(chan struct{})}
	if !b.register(s) {
		cancel()
		return nil, fmt.Errorf("subscribe %s: %w", durable, ErrClosed)
	}
	go s.run(ctx, runCtx, cons, handle)
	return s, nil
}

// Stop stops fetching and returns after the in-flight handler (if any) has finished and its
// message has been acked or naked; an idle subscription takes up to a second to notice. Messages
// fetched but not yet handled are naked for prompt redelivery. Stop is safe to call more than
// once and after the context was cancelled.
func (s *Subscription) Stop() {
	s.cancel()
	<-s.done
}

// run fetches and handles messages until runCtx is done. handlerCtx is the Subscribe context: Stop
// cancels runCtx only, so an in-flight handler finishes undisturbed.
//
// Pull requests are never abandoned while open at the server: an idle subscription waits with a
// short one-message request that runs to its end, and while there is a backlog it takes batches
// with no-wait requests, which the server closes at once. A request cancelled early would stay
// open at the server for its expiry, and a message sent into it (a new one, or one this very
// subscription just handed back while stopping) would sit unseen until AckWait. The cost is one
// small request per idleWait per idle subscription, and Stop waiting up to idleWait.
func (s *Subscription) run(handlerCtx, runCtx context.Context, cons jetstream.Consumer, handle func(context.Context, delivery) error) {
	defer close(s.done)
	defer s.bus.unregister(s)
	log := s.bus.log.With(logKeyDurable, s.durable)
	// Cancelling handlerCtx cancels runCtx, but the child learns it a moment after the parent:
	// check both, or a handler that returned on handlerCtx could be followed by another fetch.
	stopping := func() bool { return runCtx.Err() != nil || handlerCtx.Err() != nil }
	retry := fetchRetryMin
	idle := true
	for !stopping() {
		var (
			batch jetstream.MessageBatch
			err   error
		)
		if idle {
			batch, err = cons.Fetch(1, jetstream.FetchMaxWait(idleWait))
		} else {
			batch, err = cons.FetchNoWait(s.cfg.batch)
		}
		n := 0
		if err == nil {
			for msg := range batch.Messages() {
				n++
				if stopping() {
					_ = msg.Nak() // give it back for prompt redelivery
					continue
				}
				s.process(handlerCtx, log, msg, handle)
			}
			err = batch.Error()
		}
		idle = n == 0
		if err == nil {
			retry = fetchRetryMin
			continue
		}
		if stopping() {
			return
		}
		log.Warn("bus fetch failed", logKeySubject, s.subject, logKeyErr, err, logKeyDelay, retry)
		select {
		case <-runCtx.Done():
		case <-time.After(retry):
		}
		retry = min(2*retry, fetchRetryMax)
	}
}

// process handles one message and settles it: ack, nak with delay, or terminate.
func (s *Subscription) process(ctx context.Context, log *slog.Logger, msg jetstream.Msg, handle func(context.Context, delivery) error) {
	meta, err := msg.Metadata()
	if err != nil {
		log.Error("bus message without metadata, terminating", logKeySubject, msg.Subject(), logKeyErr, err)
		_ = msg.Term()
		return
	}
	d := delivery{
		subject:   msg.Subject(),
		key:       msg.Headers().Get(jetstream.MsgIDHeader),
		data:      msg.Data(),
		delivered: int(meta.NumDelivered),
		published: meta.Timestamp,
		seq:       meta.Sequence.Stream,
	}
	attrs := []any{logKeySubject, d.subject, logKeyKey, d.key, logKeySeq, d.seq, logKeyDelivered, d.delivered}

	stopKeepAlive := keepAlive(msg, s.cfg.ackWait/3)
	err = safeHandle(ctx, d, handle)
	stopKeepAlive()

	switch {
	case err == nil:
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackTimeout)
		defer cancel()
		if aerr := msg.DoubleAck(actx); aerr != nil {
			// The message will be redelivered after AckWait; a Ledger makes that harmless.
			log.Warn("bus ack failed", append(attrs, logKeyErr, aerr)...)
		}
	case IsPermanent(err):
		log.Error("bus handler failed permanently, terminating message", append(attrs, logKeyErr, err)...)
		_ = msg.TermWithReason(truncate(err.Error(), maxTermReason))
	case ctx.Err() != nil:
		// Shutting down: hand the message back at once for another consumer.
		_ = msg.Nak()
	case d.delivered >= s.cfg.maxDeliver:
		log.Error("bus handler failed on the last delivery, terminating message", append(attrs, logKeyErr, err)...)
		_ = msg.TermWithReason(truncate("max deliveries: "+err.Error(), maxTermReason))
	default:
		delay := s.cfg.nakDelay(d.delivered)
		log.Warn("bus handler failed, will redeliver", append(attrs, logKeyDelay, delay, logKeyErr, err)...)
		_ = msg.NakWithDelay(delay)
	}
}

// safeHandle runs handle, turning a panic into an error so one bad message cannot crash the
// process (and then crash it again on every redelivery).
func safeHandle(ctx context.Context, d delivery, handle func(context.Context, delivery) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panic: %v\n%s", r, debug.Stack())
		}
	}()
	return handle(ctx, d)
}

// keepAlive tells the server every interval that msg is still being worked on, until stop is
// called; stop returns once the goroutine has exited.
func keepAlive(msg jetstream.Msg, every time.Duration) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Hold makes each subscription in order, retrying one that fails (the bus not ready yet, a
// stream being created by another replica) after 1 s, doubling to a minute, with a warning on
// log; then it keeps them until ctx ends and stops them. It returns nil when ctx ends or the bus
// is closed: a consumer that runs for the process's life calls it as its Run.
func Hold(ctx context.Context, log *slog.Logger, subscribe ...func() (*Subscription, error)) error {
	delay := time.Second
	for _, sub := range subscribe {
		for {
			s, err := sub()
			if err == nil {
				defer s.Stop()
				break
			}
			if errors.Is(err, ErrClosed) {
				return nil
			}
			log.Warn("subscribe", "err", err, "retry_in", delay)
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			delay = min(2*delay, time.Minute)
		}
	}
	<-ctx.Done()
	return nil
}

// SubjectAccount returns the account token of a freshet.<account>.… subject, or "" when subject
// has no such token.
func SubjectAccount(subject string) string {
	parts := strings.SplitN(subject, ".", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[1]
}
