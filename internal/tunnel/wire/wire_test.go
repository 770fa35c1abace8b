package wire

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
)

func TestIsUpgrade(t *testing.T) {
	for _, tc := range []struct {
		conn, up, want string
	}{
		{"Upgrade", "websocket", "websocket"},
		{"keep-alive, upgrade", "h2c", "h2c"},
		{"keep-alive", "websocket", ""},
		{"", "websocket", ""},
	} {
		h := http.Header{}
		if tc.conn != "" {
			h.Set("Connection", tc.conn)
		}
		h.Set("Upgrade", tc.up)
		if got := IsUpgrade(h); got != tc.want {
			t.Errorf("Connection %q Upgrade %q: IsUpgrade = %q, want %q", tc.conn, tc.up, got, tc.want)
		}
	}
}

func TestBufferedConnReplaysReadAhead(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		io.WriteString(b, "HTTP/1.1 101 Switching Protocols\r\n\r\nPRI * HTTP/2.0")
		b.Close()
	}()
	br := bufio.NewReader(a)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	br.Peek(1) // make sure the rest is buffered
	rest, err := io.ReadAll(BufferedConn(a, br))
	if err != nil && err != io.ErrClosedPipe {
		t.Fatal(err)
	}
	if string(rest) != "PRI * HTTP/2.0" {
		t.Errorf("after the handshake: %q, want the bytes read ahead", rest)
	}
}
