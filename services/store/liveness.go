package store

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
)

// pingBeforeReuse decides whether the pool pings a connection before handing it out
// again. pgx's own rule pings one idle for a second or more; one used more recently is
// pinged only when the server has written to it since: PostgreSQL writes nothing to an
// idle session unless it is ending it (a restart, an administrator ending sessions),
// when it sends its FATAL message and closes. Without the look, the first statement
// on each connection so ended fails, and a write outside a transaction cannot then be
// run again (it may have committed), so it would fail its request.
func pingBeforeReuse(_ context.Context, p stdlib.ShouldPingParams) bool {
	return p.IdleDuration > time.Second || serverSpoke(p.Conn.PgConn().Conn())
}

// serverSpoke says whether the server has sent bytes, or closed, on a connection that
// should be quiet. It peeks without waiting and without taking the bytes, so a
// connection that turns out alive is left as it was. It looks through Control, which
// takes no lock, not Read: after a write that took a while pgx reads in the
// background, and that read may still be waiting on the socket, holding Read's lock.
// Should that read take the FATAL message, the close behind it stays visible. A
// connection it cannot look into counts as having spoken: the ping then decides.
func serverSpoke(c net.Conn) bool {
	if wrapped, ok := c.(interface{ NetConn() net.Conn }); ok { // TLS
		c = wrapped.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	spoke := true
	err = raw.Control(func(fd uintptr) {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		spoke = !errors.Is(err, syscall.EAGAIN) // bytes, the close (0 bytes) or a broken socket
	})
	return spoke || err != nil
}
