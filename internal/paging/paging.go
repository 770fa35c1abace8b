// Package paging is the one description of a page of a list ordered by ID, shared by the store
// that reads the page, the domain services that pass it on and the API edges that parse it from
// a request. It is a leaf: it imports nothing of Freshet's.
package paging

// Page selects one page of a list ordered by ID. After is the last ID of the previous page.
type Page struct {
	After string
	Limit int
}

// Page size bounds.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Size is the number of items the page holds at most: Limit, bounded to 1…MaxLimit, or
// DefaultLimit when Limit is not set.
func (p Page) Size() int {
	switch {
	case p.Limit <= 0:
		return DefaultLimit
	case p.Limit > MaxLimit:
		return MaxLimit
	}
	return p.Limit
}
