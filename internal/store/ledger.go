package store

import (
	"context"
	"time"
)

type txKey struct{}

// TxFrom returns the transaction that Ledger.Once runs its function in, so a message handler's
// changes commit together with the record that the message was handled.
func TxFrom(ctx context.Context) (*Tx, bool) {
	tx, ok := ctx.Value(txKey{}).(*Tx)
	return tx, ok
}

// Ledger records which bus messages a consumer has handled. It implements the bus package's
// Ledger interface.
type Ledger struct{ db *DB }

// Ledger returns db's message ledger.
func (db *DB) Ledger() *Ledger { return &Ledger{db: db} }

// Once runs fn unless consumer already handled key. fn runs inside a transaction (reach it with
// TxFrom) that also records key, so a message is either handled and recorded, or neither.
func (l *Ledger) Once(ctx context.Context, consumer, key string, fn func(ctx context.Context) error) error {
	return l.db.Tx(ctx, func(tx *Tx) error {
		res, err := tx.exec(ctx, `INSERT INTO processed_messages (consumer, msg_key, processed_at) VALUES (?, ?, ?)
			ON CONFLICT (consumer, msg_key) DO NOTHING`, consumer, key, time.Now().UnixMicro())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // n == 0: handled before
		}
		return fn(context.WithValue(ctx, txKey{}, tx))
	})
}

// ForgetProcessed deletes ledger entries older than t, keeping the table small. Keys older than
// the bus's redelivery horizon can no longer arrive again.
func (q *Queries) ForgetProcessed(ctx context.Context, t time.Time) (int64, error) {
	res, err := q.exec(ctx, `DELETE FROM processed_messages WHERE processed_at < ?`, micros(t))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
