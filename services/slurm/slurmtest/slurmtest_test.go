package slurmtest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// openLocks opens n lock files in a fresh directory, closed when t ends.
func openLocks(t *testing.T, n int) []*os.File {
	t.Helper()
	dir := t.TempDir()
	var out []*os.File
	for i := range n {
		f, err := os.OpenFile(filepath.Join(dir, string(rune('a'+i))+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		out = append(out, f)
	}
	return out
}

// reopen opens the same files again: flock holds per open file, so these contend with
// the first like another test's would.
func reopen(t *testing.T, locks []*os.File) []*os.File {
	t.Helper()
	var out []*os.File
	for _, f := range locks {
		g, err := os.OpenFile(f.Name(), os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		out = append(out, g)
	}
	return out
}

func TestHoldTakesAFreeCluster(t *testing.T) {
	first := openLocks(t, 2)
	if got, err := hold(first); got != 0 || err != nil {
		t.Fatalf("with both free, hold took %d (%v), want 0", got, err)
	}
	if got, err := hold(reopen(t, first)); got != 1 || err != nil {
		t.Fatalf("with the first held, hold took %d (%v), want 1", got, err)
	}
}

func TestHoldWaitsWhileEveryClusterIsHeld(t *testing.T) {
	held := openLocks(t, 2)
	for _, f := range held {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
	}
	waiting := reopen(t, held)
	type took struct {
		i   int
		err error
	}
	done := make(chan took, 1)
	go func() {
		i, err := hold(waiting)
		done <- took{i, err}
	}()
	select {
	case got := <-done:
		t.Fatalf("hold took cluster %d (%v) while both were held", got.i, got.err)
	case <-time.After(300 * time.Millisecond):
	}
	held[1].Close() // the second cluster's test ends
	select {
	case got := <-done:
		if got.i != 1 || got.err != nil {
			t.Fatalf("hold took cluster %d (%v), want the one let go (1)", got.i, got.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("hold still waits after a cluster was let go")
	}
}
