package host

import (
	"context"
	"errors"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

// gqlRollout is a Rollout of the GraphQL schema; detail is read when asked for.
type gqlRollout struct {
	h *Host
	r appproxyv1.Rollout
}

func (g *gqlRollout) Name() string      { return g.r.Name }
func (g *gqlRollout) Namespace() string { return g.r.Namespace }
func (g *gqlRollout) App() string       { return g.r.App }
func (g *gqlRollout) Phase() string     { return g.r.Phase }
func (g *gqlRollout) Strategy() string  { return g.r.Strategy }
func (g *gqlRollout) Step() *int32      { return g.r.Step }
func (g *gqlRollout) StableRevision() *int32 {
	return rev32(g.r.StableRevision)
}
func (g *gqlRollout) CanaryRevision() *int32 {
	return rev32(g.r.CanaryRevision)
}

func (g *gqlRollout) Detail(ctx context.Context) (JSON, error) {
	d, err := g.h.Rollout(ctx, "", g.r.Namespace, g.r.Name)
	return JSON{d}, err
}

func rev32(p *int64) *int32 {
	if p == nil {
		return nil
	}
	v := int32(*p)
	return &v
}

func (q *gqlRoot) Rollouts(ctx context.Context, args struct{ App *string }) ([]*gqlRollout, error) {
	l, err := q.h.ListRollouts(ctx, derefS(args.App))
	if err != nil {
		return nil, err
	}
	out := make([]*gqlRollout, 0, len(l))
	for _, r := range l {
		out = append(out, &gqlRollout{h: q.h, r: r})
	}
	return out, nil
}

func (q *gqlRoot) Rollout(ctx context.Context, args struct{ Namespace, Name string }) (*gqlRollout, error) {
	d, err := q.h.Rollout(ctx, "", args.Namespace, args.Name)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &gqlRollout{h: q.h, r: d.Rollout}, nil
}

type rolloutRef struct{ Namespace, Name string }

func (q *gqlRoot) rolloutOp(ctx context.Context, ref rolloutRef, op string, args RolloutArgs) (JSON, error) {
	d, err := q.h.RolloutOp(ctx, callerFrom(ctx), "", ref.Namespace, ref.Name, op, args)
	if err != nil {
		return JSON{}, err
	}
	return JSON{d}, nil
}

func (q *gqlRoot) PromoteRollout(ctx context.Context, args struct {
	Namespace, Name string
	Full            *bool
}) (JSON, error) {
	return q.rolloutOp(ctx, rolloutRef{args.Namespace, args.Name}, RolloutPromote, RolloutArgs{Full: deref(args.Full)})
}

func (q *gqlRoot) AbortRollout(ctx context.Context, args rolloutRef) (JSON, error) {
	return q.rolloutOp(ctx, args, RolloutAbort, RolloutArgs{})
}

func (q *gqlRoot) RetryRollout(ctx context.Context, args rolloutRef) (JSON, error) {
	return q.rolloutOp(ctx, args, RolloutRetry, RolloutArgs{})
}

func (q *gqlRoot) RestartRollout(ctx context.Context, args rolloutRef) (JSON, error) {
	return q.rolloutOp(ctx, args, RolloutRestart, RolloutArgs{})
}

func (q *gqlRoot) UndoRollout(ctx context.Context, args struct {
	Namespace, Name string
	ToRevision      *int32
}) (JSON, error) {
	var to int64
	if args.ToRevision != nil {
		to = int64(*args.ToRevision)
	}
	return q.rolloutOp(ctx, rolloutRef{args.Namespace, args.Name}, RolloutUndo, RolloutArgs{ToRevision: to})
}

func (q *gqlRoot) PauseRollout(ctx context.Context, args rolloutRef) (JSON, error) {
	return q.rolloutOp(ctx, args, RolloutPause, RolloutArgs{})
}

func (q *gqlRoot) ResumeRollout(ctx context.Context, args rolloutRef) (JSON, error) {
	return q.rolloutOp(ctx, args, RolloutResume, RolloutArgs{})
}
