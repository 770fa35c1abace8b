package events

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// The redisStream event source (Argo's RedisStreamEventSource): entries of Redis streams read
// through a consumer group.

// RedisStreamSource reads entries of streams of a Redis server with a consumer group.
type RedisStreamSource struct {
	HostAddress string             `json:"hostAddress"`
	Password    *SecretKeySelector `json:"password,omitempty"`
	DB          int32              `json:"db,omitempty"`
	Streams     []string           `json:"streams"`
	// MaxMsgCountPerRead is the COUNT of each XREADGROUP, per stream (default 10).
	MaxMsgCountPerRead int32 `json:"maxMsgCountPerRead,omitempty"`
	// ConsumerGroup is created on every stream (default argo-events-cg).
	ConsumerGroup string             `json:"consumerGroup,omitempty"`
	TLS           *TLSConfig         `json:"tls,omitempty"`
	Metadata      map[string]string  `json:"metadata,omitempty"`
	Filter        *EventSourceFilter `json:"filter,omitempty"`
	Username      string             `json:"username,omitempty"`
}

// Argo's defaults and the bounds of a redisStream source.
const (
	defaultConsumerGroup   = "argo-events-cg"
	streamConsumer         = "argo-events-worker" // Argo's: its pending entries are read again
	defaultStreamReadCount = 10
	maxStreamReadCount     = 10000
	maxStreams             = 100
	streamBlock            = 2 * time.Second
)

func validateRedisStream(f string, r RedisStreamSource) error {
	if err := checkRedisHost(f+".hostAddress", r.HostAddress); err != nil {
		return err
	}
	switch {
	case r.DB < 0:
		return errdefs.Invalid(f+".db", fmt.Sprint(r.DB), "is not a database number (0 or more)")
	case len(r.Streams) == 0:
		return errdefs.Invalid(f+".streams", "", "is required: one or more streams whose entries are read")
	case len(r.Streams) > maxStreams:
		return errdefs.Invalid(f+".streams", fmt.Sprint(len(r.Streams)), fmt.Sprintf("has more than %d streams", maxStreams))
	case r.MaxMsgCountPerRead < 0 || r.MaxMsgCountPerRead > maxStreamReadCount:
		return errdefs.Invalid(f+".maxMsgCountPerRead", fmt.Sprint(r.MaxMsgCountPerRead), fmt.Sprintf("must be between 1 and %d (0: 10)", maxStreamReadCount))
	case len(r.ConsumerGroup) > 200 || strings.ContainsAny(r.ConsumerGroup, " \t\r\n\x00"):
		return errdefs.Invalid(f+".consumerGroup", r.ConsumerGroup, "is not a consumer group name (no spaces, at most 200 bytes; empty: argo-events-cg)")
	case len(r.Username) > 200 || strings.ContainsAny(r.Username, " \t\r\n"):
		return errdefs.Invalid(f+".username", r.Username, "is not a user name")
	}
	seen := map[string]bool{}
	for i, s := range r.Streams {
		if s == "" || len(s) > 1000 || seen[s] {
			return errdefs.Invalid(fmt.Sprintf("%s.streams[%d]", f, i), s, "is not a stream name (non-empty, at most 1000 bytes, each once)")
		}
		seen[s] = true
	}
	if r.Password != nil {
		if err := checkSecretRef(f+".password", r.Password); err != nil {
			return err
		}
	}
	if err := checkTLS(f+".tls", r.TLS); err != nil {
		return err
	}
	return checkSourceFilter(f+".filter", r.Filter)
}

// checkRedisHost checks a Redis server's host:port.
func checkRedisHost(f, h string) error {
	switch {
	case h == "":
		return errdefs.Invalid(f, "", "is required: the server's host:port, e.g. redis.example.com:6379")
	case strings.Contains(h, "://") || strings.ContainsAny(h, "/?#@ ") || len(h) > 300:
		return errdefs.Invalid(f, h, "is not host:port: give no scheme, credentials or path")
	}
	if _, _, err := net.SplitHostPort(h); err != nil {
		return errdefs.Invalid(f, h, "is not host:port")
	}
	return nil
}

// redisClient is a client of the Redis at addr, its password and certificates read from ns,
// every connection dialed through the operator's policy (TLS on top of it).
func (c *Controller) redisClient(ctx context.Context, ns, f, addr string, db int32, user string, pw *SecretKeySelector, t *TLSConfig) (*redis.Client, error) {
	opt := &redis.Options{Addr: addr, DB: int(db), Username: user, Dialer: c.opts.Policy.DialContext,
		MinRetryBackoff: 100 * time.Millisecond, MaxRetryBackoff: 2 * time.Second, ContextTimeoutEnabled: true}
	if pw != nil {
		p, err := c.readSecret(ctx, ns, *pw)
		if err != nil {
			return nil, fmt.Errorf("%s.password: %w", f, err)
		}
		opt.Password = p
	}
	if t != nil {
		cfg, err := c.tlsConfig(ctx, ns, f+".tls", t)
		if err != nil {
			return nil, err
		}
		if h, _, err := net.SplitHostPort(addr); err == nil && cfg.ServerName == "" {
			cfg.ServerName = h
		}
		opt.TLSConfig = cfg
		// go-redis dials TLS itself only with its own dialer: wrap the policy's.
		opt.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := c.opts.Policy.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tc := tls.Client(conn, cfg)
			if err := tc.HandshakeContext(ctx); err != nil {
				conn.Close()
				return nil, err
			}
			return tc, nil
		}
	}
	return redis.NewClient(opt), nil
}

// readRedisStream reads a redisStream source's streams with its consumer group until ctx
// ends, as Argo does: the group is created on each stream at its end ($) if it is not there
// (the streams must exist), the consumer's pending entries are read first, then new ones; an
// entry is acknowledged (XACK) once the bus stored its event (or the filter dropped it), else
// it stays pending and is read again on the next connection.
func (c *Controller) readRedisStream(ctx context.Context, e *emitter) error {
	r := e.l.stream
	cl, err := c.redisClient(ctx, e.ns, e.l.field(), r.HostAddress, r.DB, r.Username, r.Password, r.TLS)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("connect to %s (db %d): %w", r.HostAddress, r.DB, err)
	}
	group := r.ConsumerGroup
	if group == "" {
		group = defaultConsumerGroup
	}
	for _, s := range r.Streams {
		err := cl.XGroupCreate(ctx, s, group, "$").Err()
		switch {
		case err == nil:
		case strings.HasPrefix(err.Error(), "BUSYGROUP"): // there already
		case strings.Contains(err.Error(), "requires the key to exist"):
			return fmt.Errorf("stream %s does not exist at %s: the consumer group is made on an existing stream (XADD to it first)", s, r.HostAddress)
		default:
			return fmt.Errorf("create consumer group %s on stream %s: %w", group, s, err)
		}
	}
	count := int64(r.MaxMsgCountPerRead)
	if count == 0 {
		count = defaultStreamReadCount
	}
	last := map[string]string{}
	for _, s := range r.Streams {
		last[s] = "0-0" // this consumer's pending entries first
	}
	args := make([]string, 2*len(r.Streams))
	e.connected()
	for ctx.Err() == nil {
		copy(args, r.Streams)
		for i, s := range r.Streams {
			args[len(r.Streams)+i] = last[s]
		}
		res, err := cl.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: streamConsumer, Streams: args, Count: count, Block: streamBlock}).Result()
		if errors.Is(err, redis.Nil) || ctx.Err() != nil {
			continue
		}
		if err != nil {
			return fmt.Errorf("XREADGROUP %s: %w", strings.Join(r.Streams, " "), err)
		}
		for _, st := range res {
			if len(st.Messages) == 0 {
				last[st.Stream] = ">" // no pending entries left: new ones
				continue
			}
			var acks []string
			for _, m := range st.Messages {
				data, err := redisStreamEventData(st.Stream, m.ID, m.Values, r.Metadata)
				if err != nil {
					c.log.Warn("redis stream entry dropped", logKey, e.key(), "stream", st.Stream, "id", m.ID, logErr, err)
					acks = append(acks, m.ID)
					continue
				}
				if !e.emit(ctx, digestID("redisStream", r.HostAddress, st.Stream, m.ID), data) {
					if ctx.Err() != nil {
						return nil
					}
					// It stays pending: the next connection reads it again, first.
					if len(acks) > 0 {
						_ = cl.XAck(ctx, st.Stream, group, acks...).Err()
					}
					return fmt.Errorf("the event bus did not store entry %s of stream %s", m.ID, st.Stream)
				}
				acks = append(acks, m.ID)
			}
			if len(acks) == 0 {
				continue
			}
			if err := cl.XAck(ctx, st.Stream, group, acks...).Err(); err != nil && ctx.Err() == nil {
				c.log.Warn("redis stream entries not acknowledged", logKey, e.key(), "stream", st.Stream, logErr, err)
			}
			if last[st.Stream] != ">" {
				last[st.Stream] = acks[len(acks)-1]
			}
		}
	}
	return nil
}

// redisStreamEventData is a stream entry's event data, as Argo's RedisStreamEventData:
// stream, message_id, values (the entry's fields) and metadata.
func redisStreamEventData(stream, id string, values map[string]any, metadata map[string]string) ([]byte, error) {
	return json.Marshal(struct {
		Stream   string            `json:"stream"`
		ID       string            `json:"message_id"`
		Values   map[string]any    `json:"values"`
		Metadata map[string]string `json:"metadata,omitempty"`
	}{stream, id, values, metadata})
}
