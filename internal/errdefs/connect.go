package errdefs

import (
	"context"
	"errors"

	"connectrpc.com/connect"
)

// ConnectCode maps err's kind to its Connect (gRPC) code, the agent protocols' equivalent of
// HTTPStatus.
func ConnectCode(err error) connect.Code {
	switch {
	case errors.Is(err, ErrUnauthenticated):
		return connect.CodeUnauthenticated
	case errors.Is(err, ErrForbidden):
		return connect.CodePermissionDenied
	case errors.Is(err, ErrNotFound):
		return connect.CodeNotFound
	case errors.Is(err, ErrConflict):
		return connect.CodeFailedPrecondition
	case errors.Is(err, ErrInvalid):
		return connect.CodeInvalidArgument
	case errors.Is(err, ErrTooLarge), errors.Is(err, ErrRateLimited), errors.Is(err, ErrLimitExceeded):
		return connect.CodeResourceExhausted
	case errors.Is(err, ErrUnavailable), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// A request the server stopped (it is shutting down, or the call ran out of time) is
		// worth retrying.
		return connect.CodeUnavailable
	}
	return connect.CodeInternal
}

// ConnectError is err as the agent protocols answer it: its Connect code, and its text unless it
// is internal (an agent learns no more of the server's internals than a browser does). A nil
// err is nil; an error that already is a *connect.Error passes unchanged.
func ConnectError(err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return err
	}
	code := ConnectCode(err)
	if code == connect.CodeInternal {
		return connect.NewError(code, errors.New(InternalMessage))
	}
	return connect.NewError(code, err)
}
