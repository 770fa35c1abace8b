package store

import (
	"context"
	"time"
)

// ID prefixes of environments and products.
const (
	PrefixEnvironment = "env"
	PrefixProduct     = "prd"
)

// Environment is a row of environments. Targets is JSON owned by internal/products.
type Environment struct {
	ID, AccountID, Name, Kind string
	Order                     int
	Targets                   string
	CreatedAt, UpdatedAt      time.Time
}

// Product is a row of products. Patterns is JSON owned by internal/products.
type Product struct {
	ID, AccountID, Name, Patterns string
	CreatedAt                     time.Time
}

const environmentCols = `id, account_id, name, kind, position, targets, created_at, updated_at`

func scanEnvironment(s interface{ Scan(...any) error }) (Environment, error) {
	var e Environment
	var created, updated int64
	err := s.Scan(&e.ID, &e.AccountID, &e.Name, &e.Kind, &e.Order, &e.Targets, &created, &updated)
	e.CreatedAt, e.UpdatedAt = fromMicros(created), fromMicros(updated)
	return e, err
}

// CreateEnvironment stores e; an environment of the same name is errdefs.ErrConflict.
func (q *Queries) CreateEnvironment(ctx context.Context, e Environment) error {
	_, err := q.exec(ctx, `INSERT INTO environments (`+environmentCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.AccountID, e.Name, e.Kind, e.Order, e.Targets, micros(e.CreatedAt), micros(e.UpdatedAt))
	return err
}

// UpdateEnvironment replaces the kind, order and targets of account's environment e.Name; none
// is errdefs.ErrNotFound.
func (q *Queries) UpdateEnvironment(ctx context.Context, e Environment) error {
	res, err := q.exec(ctx, `UPDATE environments SET kind = ?, position = ?, targets = ?, updated_at = ? WHERE account_id = ? AND name = ?`,
		e.Kind, e.Order, e.Targets, micros(e.UpdatedAt), e.AccountID, e.Name)
	if err != nil {
		return err
	}
	return affected(res, "environment", e.Name)
}

// ListEnvironments returns account's environments in promotion order, then by name.
func (q *Queries) ListEnvironments(ctx context.Context, accountID string) ([]Environment, error) {
	rows, err := q.query(ctx, `SELECT `+environmentCols+` FROM environments WHERE account_id = ? ORDER BY position, name`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Environment
	for rows.Next() {
		e, err := scanEnvironment(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// GetEnvironment returns account's environment name; none is errdefs.ErrNotFound.
func (q *Queries) GetEnvironment(ctx context.Context, accountID, name string) (Environment, error) {
	e, err := scanEnvironment(q.queryRow(ctx, `SELECT `+environmentCols+` FROM environments WHERE account_id = ? AND name = ?`, accountID, name))
	return e, notFound(err, "environment", name)
}

// DeleteEnvironment deletes account's environment name; none is errdefs.ErrNotFound.
func (q *Queries) DeleteEnvironment(ctx context.Context, accountID, name string) error {
	res, err := q.exec(ctx, `DELETE FROM environments WHERE account_id = ? AND name = ?`, accountID, name)
	if err != nil {
		return err
	}
	return affected(res, "environment", name)
}

const productCols = `id, account_id, name, patterns, created_at`

func scanProduct(s interface{ Scan(...any) error }) (Product, error) {
	var p Product
	var created int64
	err := s.Scan(&p.ID, &p.AccountID, &p.Name, &p.Patterns, &created)
	p.CreatedAt = fromMicros(created)
	return p, err
}

// CreateProduct stores p; a product of the same name is errdefs.ErrConflict.
func (q *Queries) CreateProduct(ctx context.Context, p Product) error {
	_, err := q.exec(ctx, `INSERT INTO products (`+productCols+`) VALUES (?, ?, ?, ?, ?)`, p.ID, p.AccountID, p.Name, p.Patterns, micros(p.CreatedAt))
	return err
}

// ListProducts returns account's product definitions by name.
func (q *Queries) ListProducts(ctx context.Context, accountID string) ([]Product, error) {
	rows, err := q.query(ctx, `SELECT `+productCols+` FROM products WHERE account_id = ? ORDER BY name`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Product
	for rows.Next() {
		p, err := scanProduct(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// UpdateProduct replaces the patterns of account's product definition p.Name; none is
// errdefs.ErrNotFound.
func (q *Queries) UpdateProduct(ctx context.Context, p Product) error {
	res, err := q.exec(ctx, `UPDATE products SET patterns = ? WHERE account_id = ? AND name = ?`, p.Patterns, p.AccountID, p.Name)
	if err != nil {
		return err
	}
	return affected(res, "product", p.Name)
}

// DeleteProduct deletes account's product definition name; none is errdefs.ErrNotFound.
func (q *Queries) DeleteProduct(ctx context.Context, accountID, name string) error {
	res, err := q.exec(ctx, `DELETE FROM products WHERE account_id = ? AND name = ?`, accountID, name)
	if err != nil {
		return err
	}
	return affected(res, "product", name)
}
