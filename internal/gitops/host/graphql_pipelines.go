package host

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Delivery Pipelines in the app-proxy's GraphQL API: the same reads and commit as the REST
// routes of pipelines.go.

func (q *gqlRoot) Sensors(ctx context.Context, args struct{ Namespace *string }) ([]JSON, error) {
	ec, err := q.h.eventsCtl()
	if err != nil {
		return nil, err
	}
	l, err := ec.ListSensors(ctx, derefS(args.Namespace))
	return jsonList(l), err
}

func (q *gqlRoot) EventSources(ctx context.Context, args struct{ Namespace *string }) ([]JSON, error) {
	ec, err := q.h.eventsCtl()
	if err != nil {
		return nil, err
	}
	l, err := ec.ListEventSources(ctx, derefS(args.Namespace))
	return jsonList(l), err
}

func jsonList[T any](l []T) []JSON {
	out := make([]JSON, 0, len(l))
	for _, v := range l {
		out = append(out, JSON{v})
	}
	return out
}

func (q *gqlRoot) CreateDeliveryPipeline(ctx context.Context, args struct {
	GitSource string
	Pipeline  JSON
}) (JSON, error) {
	// The pipeline is the REST body: decoded as strictly (unknown fields are refused).
	b, err := json.Marshal(args.Pipeline.V)
	if err != nil || len(b) > maxBody {
		return JSON{}, errdefs.Invalid("pipeline", "", "is not a Delivery Pipeline of at most 1 MiB")
	}
	var req appproxyv1.DeliveryPipelineCommitRequest
	if err := decodeStrict(bytes.NewReader(b), &req); err != nil {
		return JSON{}, errdefs.Invalid("pipeline", "", "is not a Delivery Pipeline (the REST body of POST git-sources/{name}/delivery-pipelines): "+err.Error())
	}
	res, err := q.h.CommitDeliveryPipeline(ctx, callerFrom(ctx), args.GitSource, req)
	if err != nil {
		return JSON{}, err
	}
	return JSON{res}, nil
}
