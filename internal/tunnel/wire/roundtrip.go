package wire

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// inlineBody: a request body of known length up to this size is read before the request is
// sent and goes out with its head, in the same write; larger or unknown bodies stream from a
// goroutine as the runtime's window allows.
const inlineBody = 64 << 10

var bodyBufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// RoundTrip sends req to the runtime and returns its answer once the head arrived; the
// caller must close the body. req's context cancels the exchange at any point (the runtime's
// handler sees its context cancelled). req.URL supplies the path and query only; req.Host is
// sent as the request's host. A request body is closed when it was sent, as by
// http.Transport.
func (s *Session) RoundTrip(req *http.Request) (*http.Response, error) {
	if !s.client {
		return nil, errors.New("tunnel: RoundTrip on the runtime's end of a tunnel connection")
	}
	ctx := req.Context()
	body := req.Body
	if body == http.NoBody {
		body = nil
	}
	cl := req.ContentLength
	switch {
	case body == nil:
		cl = 0
	case cl == 0:
		cl = -1 // net/http: a body with ContentLength 0 is of unknown length
	}
	var inline []byte
	if body != nil && cl > 0 && cl <= inlineBody {
		inline = make([]byte, cl)
		_, err := io.ReadFull(body, inline)
		body.Close()
		if err != nil {
			return nil, errors.Join(errors.New("tunnel: read the request body"), err)
		}
		body = nil
	}
	st, err := s.open()
	if err != nil {
		if body != nil {
			body.Close()
		}
		return nil, err
	}
	host := req.Host
	if host == "" && req.URL != nil {
		host = req.URL.Host
	}
	head := &reqHead{method: req.Method, uri: req.URL.RequestURI(), host: host, contentLength: cl, header: req.Header}
	if head.method == "" {
		head.method = http.MethodGet
	}
	st.mu.Lock()
	st.sendWin -= len(inline)
	st.sendEnd = body == nil
	st.mu.Unlock()
	var qerr error
	switch {
	case inline != nil && len(req.Trailer) == 0:
		qerr = s.queue(true, frame{typ: frameHead, id: st.id, enc: head}, frame{typ: frameData, flags: flagEnd, id: st.id, payload: inline})
	case inline != nil:
		qerr = s.queue(true, frame{typ: frameHead, id: st.id, enc: head}, frame{typ: frameData, id: st.id, payload: inline}, frame{typ: frameTrailer, id: st.id, enc: fieldsEncoder(req.Trailer)})
	case body == nil:
		qerr = s.queue(true, frame{typ: frameHead, flags: flagEnd, id: st.id, enc: head})
	default:
		qerr = s.queue(true, frame{typ: frameHead, id: st.id, enc: head})
	}
	if qerr != nil {
		st.reset(resetCancel, "", qerr)
		if body != nil {
			body.Close()
		}
		return nil, qerr
	}
	if body != nil {
		go st.sendBody(body, req)
	}
	rh, rerr, ok := st.waitHead(ctx)
	if !ok {
		st.reset(resetCancel, "the control plane cancelled the request", context.Cause(ctx))
		return nil, ctx.Err()
	}
	if rh == nil {
		if rerr == nil {
			rerr = errors.New("tunnel: the exchange ended without an answer")
		}
		return nil, rerr
	}
	resp := &http.Response{
		Status:        statusLine(rh.status),
		StatusCode:    rh.status,
		Proto:         "HTTP/2.0",
		ProtoMajor:    2,
		Header:        rh.header,
		ContentLength: rh.contentLength,
		Request:       req,
	}
	resp.Trailer = announcedTrailer(rh.header)
	b := &clientBody{st: st, resp: resp}
	st.mu.Lock()
	complete := st.recvEnd // the whole body is here: nothing left to cancel
	st.mu.Unlock()
	if !complete && ctx.Done() != nil {
		b.stop = context.AfterFunc(ctx, func() {
			st.reset(resetCancel, "the control plane cancelled the request", context.Cause(ctx))
		})
	}
	resp.Body = b
	return resp, nil
}

// sendBody streams a request body to the runtime, then its trailers.
func (st *stream) sendBody(body io.ReadCloser, req *http.Request) {
	defer body.Close()
	bp := bodyBufPool.Get().(*[]byte)
	defer bodyBufPool.Put(bp)
	buf := *bp
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if werr := st.write(buf[:n], false); werr != nil {
				return // the exchange is over: reset, or the runtime has its answer
			}
		}
		if err == io.EOF {
			if len(req.Trailer) > 0 {
				st.endWith(req.Trailer)
			} else {
				st.write(nil, true)
			}
			return
		}
		if err != nil {
			st.reset(resetCancel, "the control plane could not read the request body", err)
			return
		}
	}
}

// clientBody is a response body as the control plane reads it.
type clientBody struct {
	st   *stream
	resp *http.Response
	stop func() bool
	once sync.Once
	eof  bool
}

func (b *clientBody) Read(p []byte) (int, error) {
	n, err := b.st.read(p)
	if err == io.EOF && !b.eof {
		b.eof = true
		b.st.mu.Lock()
		t := b.st.trailer
		b.st.mu.Unlock()
		if len(t) > 0 {
			if b.resp.Trailer == nil {
				b.resp.Trailer = make(http.Header, len(t))
			}
			for k, vv := range t {
				b.resp.Trailer[k] = vv
			}
		}
		b.release()
	}
	return n, err
}

func (b *clientBody) release() {
	b.once.Do(func() {
		if b.stop != nil {
			b.stop()
		}
	})
}

func (b *clientBody) Close() error {
	b.release()
	b.st.reset(resetCancel, "the control plane closed the response", errBodyClosed)
	return nil
}

// statusLines are the Status strings of http.Response ("200 OK") for the codes net/http
// knows, made once.
var statusLines = func() map[int]string {
	m := map[int]string{}
	for code := 100; code < 600; code++ {
		if t := http.StatusText(code); t != "" {
			m[code] = strconv.Itoa(code) + " " + t
		}
	}
	return m
}()

func statusLine(code int) string {
	if s, ok := statusLines[code]; ok {
		return s
	}
	return strconv.Itoa(code) + " " + http.StatusText(code)
}
