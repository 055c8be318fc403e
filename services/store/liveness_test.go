package store

import (
	"io"
	"net"
	"testing"
	"time"
)

// The look into a pooled connection sees what the server sent, or its close, and
// takes nothing: a connection found quiet is left for the next statement as it was.
func TestServerSpoke(t *testing.T) {
	for _, sent := range []string{"E", ""} {
		client, server := loopbackPair(t)
		if serverSpoke(client) {
			t.Fatal("a quiet connection was said to have spoken")
		}
		if _, err := server.Write([]byte(sent)); err != nil {
			t.Fatal(err)
		}
		server.Close()
		if !waitSpoke(client) {
			t.Fatalf("the server's %q and close went unseen", sent)
		}
		got, err := io.ReadAll(client)
		if err != nil || string(got) != sent {
			t.Fatalf("read after the look: %q, %v; want %q still there", got, err, sent)
		}
	}
}

func loopbackPair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	if server = <-accepted; server == nil {
		t.Fatal("no connection accepted")
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// waitSpoke looks until what was sent on loopback has arrived.
func waitSpoke(c net.Conn) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if serverSpoke(c) {
			return true
		}
	}
	return false
}

// The look is paid by every statement on PostgreSQL (a page has two round trips).
func BenchmarkServerSpoke(b *testing.B) {
	client, _ := loopbackPair(b)
	for b.Loop() {
		if serverSpoke(client) {
			b.Fatal("a quiet connection was said to have spoken")
		}
	}
}
