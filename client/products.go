package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// EnvironmentTarget is where an environment's applications run: globs of the runtime's name,
// the destination cluster (name, else server URL) and namespace; empty matches anything.
type EnvironmentTarget struct {
	Runtime   string `json:"runtime,omitempty"`
	Cluster   string `json:"cluster,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// Environment is a named set of targets with a kind (prod, non-prod) and a promotion order.
type Environment struct {
	Name      string              `json:"name"`
	Kind      string              `json:"kind"`
	Order     int                 `json:"order"`
	Targets   []EnvironmentTarget `json:"targets"`
	CreatedAt time.Time           `json:"createdAt"`
	UpdatedAt time.Time           `json:"updatedAt"`
}

// EnvironmentRequest creates or replaces an environment (the name of a PUT is the path's).
type EnvironmentRequest struct {
	Name    string              `json:"name"`
	Kind    string              `json:"kind"`
	Order   int                 `json:"order"`
	Targets []EnvironmentTarget `json:"targets"`
}

// Product is a product: a definition with app-name globs, or a name only annotations give.
type Product struct {
	Name         string    `json:"name"`
	Patterns     []string  `json:"patterns"`
	Defined      bool      `json:"defined"`
	Applications int       `json:"applications"`
	CreatedAt    time.Time `json:"createdAt,omitzero"`
}

// CreateProductRequest defines a product.
type CreateProductRequest struct {
	Name     string   `json:"name"`
	Patterns []string `json:"patterns,omitempty"`
}

// ProductImage is an image an application's latest deployment record lists.
type ProductImage struct {
	Registry   string        `json:"registry,omitempty"`
	Repository string        `json:"repository"`
	Tags       []string      `json:"tags,omitempty"`
	Digest     string        `json:"digest"`
	Commits    []ImageCommit `json:"commits"`
	Issues     []ImageIssue  `json:"issues"`
}

// ProductApplication is what one application of a product runs in an environment.
type ProductApplication struct {
	Runtime    string         `json:"runtime"`
	Name       string         `json:"name"`
	Cluster    string         `json:"cluster"`
	Namespace  string         `json:"namespace"`
	Health     string         `json:"health"`
	Sync       string         `json:"sync"`
	Revision   string         `json:"revision"`
	Images     []ProductImage `json:"images"`
	DeployedAt time.Time      `json:"deployedAt,omitzero"`
}

// ProductEnvironment is what a product runs in one environment.
type ProductEnvironment struct {
	Environment  Environment          `json:"environment"`
	Applications []ProductApplication `json:"applications"`
}

// ProductImageChange is an image repository whose digest differs between two environments.
type ProductImageChange struct {
	Repository string   `json:"repository"`
	From       string   `json:"from"`
	To         string   `json:"to"`
	FromTags   []string `json:"fromTags,omitempty"`
	ToTags     []string `json:"toTags,omitempty"`
}

// ProductPromotion is what promoting a product from one environment to the next would change.
type ProductPromotion struct {
	From          string               `json:"from"`
	To            string               `json:"to"`
	FromRevisions []string             `json:"fromRevisions"`
	ToRevisions   []string             `json:"toRevisions"`
	Images        []ProductImageChange `json:"images"`
	Commits       []ImageCommit        `json:"commits"`
	Issues        []ImageIssue         `json:"issues"`
}

// ProductView is a product's Environments view.
type ProductView struct {
	Product      Product              `json:"product"`
	Environments []ProductEnvironment `json:"environments"`
	Promotions   []ProductPromotion   `json:"promotions"`
	Unplaced     []ProductApplication `json:"unplaced"`
}

// CreateEnvironment adds an environment.
func (c *Client) CreateEnvironment(ctx context.Context, r EnvironmentRequest) (Environment, error) {
	var out Environment
	err := c.do(ctx, http.MethodPost, "/api/v1/environments", nil, r, &out)
	return out, err
}

// UpdateEnvironment replaces an environment's kind, order and targets.
func (c *Client) UpdateEnvironment(ctx context.Context, r EnvironmentRequest) (Environment, error) {
	var out Environment
	err := c.do(ctx, http.MethodPut, "/api/v1/environments/"+url.PathEscape(r.Name), nil, r, &out)
	return out, err
}

// ListEnvironments lists the account's environments in promotion order.
func (c *Client) ListEnvironments(ctx context.Context) (List[Environment], error) {
	var out List[Environment]
	err := c.do(ctx, http.MethodGet, "/api/v1/environments", nil, nil, &out)
	return out, err
}

// GetEnvironment reads an environment.
func (c *Client) GetEnvironment(ctx context.Context, name string) (Environment, error) {
	var out Environment
	err := c.do(ctx, http.MethodGet, "/api/v1/environments/"+url.PathEscape(name), nil, nil, &out)
	return out, err
}

// DeleteEnvironment removes an environment.
func (c *Client) DeleteEnvironment(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/environments/"+url.PathEscape(name), nil, nil, nil)
}

// CreateProduct defines a product.
func (c *Client) CreateProduct(ctx context.Context, r CreateProductRequest) (Product, error) {
	var out Product
	err := c.do(ctx, http.MethodPost, "/api/v1/products", nil, r, &out)
	return out, err
}

// UpdateProduct replaces a product definition's patterns (r.Name names it).
func (c *Client) UpdateProduct(ctx context.Context, r CreateProductRequest) (Product, error) {
	var out Product
	err := c.do(ctx, http.MethodPut, "/api/v1/products/"+url.PathEscape(r.Name), nil, r, &out)
	return out, err
}

// ListProducts lists the account's products: defined ones and those annotations name.
func (c *Client) ListProducts(ctx context.Context) (List[Product], error) {
	var out List[Product]
	err := c.do(ctx, http.MethodGet, "/api/v1/products", nil, nil, &out)
	return out, err
}

// GetProduct reads a product's Environments view.
func (c *Client) GetProduct(ctx context.Context, name string) (ProductView, error) {
	var out ProductView
	err := c.do(ctx, http.MethodGet, "/api/v1/products/"+url.PathEscape(name), nil, nil, &out)
	return out, err
}

// DeleteProduct removes a product definition.
func (c *Client) DeleteProduct(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/products/"+url.PathEscape(name), nil, nil, nil)
}
