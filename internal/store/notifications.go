package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/paging"
)

// ID prefixes of notification channels, subscriptions and deliveries.
const (
	PrefixNotificationChannel      = "nch"
	PrefixNotificationSubscription = "nsb"
	PrefixNotificationDelivery     = "ndl"
)

// NotificationChannel is an account's notification channel. Config is its public settings
// (JSON); Secret a secrets ciphertext of what is never shown, or "".
type NotificationChannel struct {
	ID, AccountID, Name, Kind, Config, Secret string
	CreatedAt                                 time.Time
}

// CreateNotificationChannel stores c; a channel of the same name is errdefs.ErrConflict.
func (q *Queries) CreateNotificationChannel(ctx context.Context, c NotificationChannel) error {
	_, err := q.exec(ctx, `INSERT INTO notification_channels (id, account_id, name, kind, config, secret, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, c.ID, c.AccountID, c.Name, c.Kind, c.Config, c.Secret, micros(c.CreatedAt))
	return err
}

const channelCols = `id, account_id, name, kind, config, secret, created_at`

func scanChannel(s interface{ Scan(...any) error }) (NotificationChannel, error) {
	var c NotificationChannel
	var created int64
	err := s.Scan(&c.ID, &c.AccountID, &c.Name, &c.Kind, &c.Config, &c.Secret, &created)
	c.CreatedAt = fromMicros(created)
	return c, err
}

// ListNotificationChannels returns account's channels by name.
func (q *Queries) ListNotificationChannels(ctx context.Context, accountID string) ([]NotificationChannel, error) {
	rows, err := q.query(ctx, `SELECT `+channelCols+` FROM notification_channels WHERE account_id = ? ORDER BY name`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []NotificationChannel
	for rows.Next() {
		c, err := scanChannel(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// GetNotificationChannel returns account's channel name; none is errdefs.ErrNotFound.
func (q *Queries) GetNotificationChannel(ctx context.Context, accountID, name string) (NotificationChannel, error) {
	c, err := scanChannel(q.queryRow(ctx, `SELECT `+channelCols+` FROM notification_channels WHERE account_id = ? AND name = ?`, accountID, name))
	return c, notFound(err, "notification channel", name)
}

// NotificationChannelByID returns the channel id of account; none is errdefs.ErrNotFound.
func (q *Queries) NotificationChannelByID(ctx context.Context, accountID, id string) (NotificationChannel, error) {
	c, err := scanChannel(q.queryRow(ctx, `SELECT `+channelCols+` FROM notification_channels WHERE account_id = ? AND id = ?`, accountID, id))
	return c, notFound(err, "notification channel", id)
}

// DeleteNotificationChannel deletes account's channel name with its subscriptions and
// deliveries; none is errdefs.ErrNotFound.
func (q *Queries) DeleteNotificationChannel(ctx context.Context, accountID, name string) error {
	c, err := q.GetNotificationChannel(ctx, accountID, name)
	if err != nil {
		return err
	}
	// Children first: SQLite enforces the cascade only with foreign keys on, PostgreSQL always.
	if _, err := q.exec(ctx, `DELETE FROM notification_attempts WHERE delivery_id IN (SELECT id FROM notification_deliveries WHERE channel_id = ?)`, c.ID); err != nil {
		return err
	}
	for _, t := range []string{"notification_deliveries", "notification_subscriptions"} {
		if _, err := q.exec(ctx, `DELETE FROM `+t+` WHERE channel_id = ?`, c.ID); err != nil {
			return err
		}
	}
	_, err = q.exec(ctx, `DELETE FROM notification_channels WHERE id = ?`, c.ID)
	return err
}

// NotificationSubscription routes events of the kinds in Events (narrowed by Pipeline and
// Application when set) to a channel. Channel is the channel's name (filled by reads).
type NotificationSubscription struct {
	ID, AccountID, ChannelID, Channel string
	Events                            []string
	Pipeline, Application             string
	CreatedAt                         time.Time
}

// CreateNotificationSubscription stores s.
func (q *Queries) CreateNotificationSubscription(ctx context.Context, s NotificationSubscription) error {
	evs, _ := json.Marshal(nonNil(s.Events))
	_, err := q.exec(ctx, `INSERT INTO notification_subscriptions (id, account_id, channel_id, events, pipeline, application, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, s.ID, s.AccountID, s.ChannelID, string(evs), s.Pipeline, s.Application, micros(s.CreatedAt))
	return err
}

// ListNotificationSubscriptions returns account's subscriptions, oldest first.
func (q *Queries) ListNotificationSubscriptions(ctx context.Context, accountID string) ([]NotificationSubscription, error) {
	rows, err := q.query(ctx, `SELECT s.id, s.account_id, s.channel_id, c.name, s.events, s.pipeline, s.application, s.created_at
		FROM notification_subscriptions s JOIN notification_channels c ON c.id = s.channel_id
		WHERE s.account_id = ? ORDER BY s.id`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []NotificationSubscription
	for rows.Next() {
		var s NotificationSubscription
		var evs string
		var created int64
		if err := rows.Scan(&s.ID, &s.AccountID, &s.ChannelID, &s.Channel, &evs, &s.Pipeline, &s.Application, &created); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(evs), &s.Events); err != nil {
			return nil, fmt.Errorf("notification subscription %s: decode events: %w", s.ID, err)
		}
		s.CreatedAt = fromMicros(created)
		out = append(out, s)
	}
	return out, rows.Err()
}

// DeleteNotificationSubscription deletes account's subscription id; none is errdefs.ErrNotFound.
func (q *Queries) DeleteNotificationSubscription(ctx context.Context, accountID, id string) error {
	res, err := q.exec(ctx, `DELETE FROM notification_subscriptions WHERE account_id = ? AND id = ?`, accountID, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound(sql.ErrNoRows, "notification subscription", id)
	}
	return nil
}

// NotificationDelivery is one event queued for one channel. Channel is the channel's name
// (filled by listings).
type NotificationDelivery struct {
	ID, AccountID, ChannelID, Channel string
	EventKey, Kind, Payload, Status   string
	Attempts                          int
	NextAttemptAt                     time.Time
	LastError                         string
	CreatedAt, UpdatedAt              time.Time
}

// EnqueueNotification queues d unless its channel already has a delivery of d.EventKey, and
// reports whether it queued it.
func (q *Queries) EnqueueNotification(ctx context.Context, d NotificationDelivery) (bool, error) {
	res, err := q.exec(ctx, `INSERT INTO notification_deliveries (id, account_id, channel_id, event_key, kind, payload, status, attempts,
		next_attempt_at, last_error, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (channel_id, event_key) DO NOTHING`, d.ID, d.AccountID, d.ChannelID, d.EventKey, d.Kind, d.Payload, d.Status, d.Attempts,
		micros(d.NextAttemptAt), d.LastError, micros(d.CreatedAt), micros(d.UpdatedAt))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

const deliveryCols = `d.id, d.account_id, d.channel_id, c.name, d.event_key, d.kind, d.payload, d.status, d.attempts, d.next_attempt_at,
	d.last_error, d.created_at, d.updated_at`

func (q *Queries) deliveries(ctx context.Context, where string, args ...any) ([]NotificationDelivery, error) {
	rows, err := q.query(ctx, `SELECT `+deliveryCols+` FROM notification_deliveries d JOIN notification_channels c ON c.id = d.channel_id `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []NotificationDelivery
	for rows.Next() {
		var d NotificationDelivery
		var next, created, updated int64
		if err := rows.Scan(&d.ID, &d.AccountID, &d.ChannelID, &d.Channel, &d.EventKey, &d.Kind, &d.Payload, &d.Status, &d.Attempts,
			&next, &d.LastError, &created, &updated); err != nil {
			return nil, err
		}
		d.NextAttemptAt, d.CreatedAt, d.UpdatedAt = fromMicros(next), fromMicros(created), fromMicros(updated)
		out = append(out, d)
	}
	return out, rows.Err()
}

// DueNotifications returns up to limit pending deliveries of every account whose next attempt
// is due at now, the longest waiting first.
func (q *Queries) DueNotifications(ctx context.Context, now time.Time, limit int) ([]NotificationDelivery, error) {
	return q.deliveries(ctx, `WHERE d.status = 'pending' AND d.next_attempt_at <= ? ORDER BY d.next_attempt_at LIMIT ?`, micros(now), limit)
}

// ClaimNotification moves a pending delivery's next attempt from was to until, and reports
// whether it did: of two senders that read the same row, one claims it.
func (q *Queries) ClaimNotification(ctx context.Context, id string, was, until time.Time) (bool, error) {
	res, err := q.exec(ctx, `UPDATE notification_deliveries SET next_attempt_at = ? WHERE id = ? AND status = 'pending' AND next_attempt_at = ?`,
		micros(until), id, micros(was))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// NotificationAttempt is one attempt of a delivery.
type NotificationAttempt struct {
	DeliveryID, AccountID string
	Attempt               int
	At                    time.Time
	Duration              time.Duration
	StatusCode            int
	Error                 string
}

// RecordNotificationAttempt stores a and the delivery's state after it: status, attempts, the
// next attempt's time and the last error.
func (q *Queries) RecordNotificationAttempt(ctx context.Context, a NotificationAttempt, status string, next time.Time) error {
	if _, err := q.exec(ctx, `INSERT INTO notification_attempts (delivery_id, attempt, account_id, at, duration_us, status_code, error)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, a.DeliveryID, a.Attempt, a.AccountID, micros(a.At), a.Duration.Microseconds(), a.StatusCode, a.Error); err != nil {
		return err
	}
	_, err := q.exec(ctx, `UPDATE notification_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_error = ?, updated_at = ?
		WHERE id = ?`, status, a.Attempt, micros(next), a.Error, micros(a.At.Add(a.Duration)), a.DeliveryID)
	return err
}

// NotificationDeliveryFilter narrows a delivery listing.
type NotificationDeliveryFilter struct {
	Channel string // the channel's name
	Status  string
}

// ListNotificationDeliveries returns account's deliveries f selects, newest first, after p.After.
func (q *Queries) ListNotificationDeliveries(ctx context.Context, accountID string, f NotificationDeliveryFilter, p paging.Page) ([]NotificationDelivery, error) {
	where, args := `WHERE d.account_id = ?`, []any{accountID}
	if f.Channel != "" {
		where += ` AND c.name = ?`
		args = append(args, f.Channel)
	}
	if f.Status != "" {
		where += ` AND d.status = ?`
		args = append(args, f.Status)
	}
	if p.After != "" {
		where += ` AND d.id < ?`
		args = append(args, p.After)
	}
	return q.deliveries(ctx, where+` ORDER BY d.id DESC LIMIT ?`, append(args, p.Size())...)
}

// GetNotificationDelivery returns account's delivery id; none is errdefs.ErrNotFound.
func (q *Queries) GetNotificationDelivery(ctx context.Context, accountID, id string) (NotificationDelivery, error) {
	ds, err := q.deliveries(ctx, `WHERE d.account_id = ? AND d.id = ?`, accountID, id)
	if err != nil {
		return NotificationDelivery{}, err
	}
	if len(ds) == 0 {
		return NotificationDelivery{}, notFound(sql.ErrNoRows, "notification delivery", id)
	}
	return ds[0], nil
}

// NotificationAttempts returns the attempts of account's deliveries ids, by delivery and attempt.
func (q *Queries) NotificationAttempts(ctx context.Context, accountID string, ids []string) ([]NotificationAttempt, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := []any{accountID}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := q.query(ctx, `SELECT delivery_id, account_id, attempt, at, duration_us, status_code, error FROM notification_attempts
		WHERE account_id = ? AND delivery_id IN (?`+strings.Repeat(`, ?`, len(ids)-1)+`) ORDER BY delivery_id, attempt`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []NotificationAttempt
	for rows.Next() {
		var a NotificationAttempt
		var at, dur int64
		if err := rows.Scan(&a.DeliveryID, &a.AccountID, &a.Attempt, &at, &dur, &a.StatusCode, &a.Error); err != nil {
			return nil, err
		}
		a.At, a.Duration = fromMicros(at), time.Duration(dur)*time.Microsecond
		out = append(out, a)
	}
	return out, rows.Err()
}

// AllNotificationChannels returns every account's channels (for re-encrypting their secrets).
func (q *Queries) AllNotificationChannels(ctx context.Context) ([]NotificationChannel, error) {
	rows, err := q.query(ctx, `SELECT `+channelCols+` FROM notification_channels ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []NotificationChannel
	for rows.Next() {
		c, err := scanChannel(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// SetNotificationChannelSecret replaces the secret ciphertext of channel id.
func (q *Queries) SetNotificationChannelSecret(ctx context.Context, id, secret string) error {
	_, err := q.exec(ctx, `UPDATE notification_channels SET secret = ? WHERE id = ?`, secret, id)
	return err
}

// PruneNotificationDeliveries deletes delivered and failed deliveries (with their attempts) last
// changed before before, and reports how many.
func (q *Queries) PruneNotificationDeliveries(ctx context.Context, before time.Time) (int64, error) {
	if _, err := q.exec(ctx, `DELETE FROM notification_attempts WHERE delivery_id IN
		(SELECT id FROM notification_deliveries WHERE updated_at < ? AND status <> 'pending')`, micros(before)); err != nil {
		return 0, err
	}
	res, err := q.exec(ctx, `DELETE FROM notification_deliveries WHERE updated_at < ? AND status <> 'pending'`, micros(before))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
