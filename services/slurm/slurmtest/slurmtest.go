// Package slurmtest gives tests the throw-away Slurm of scripts/slurm.sh, one test at
// a time: the cluster has one node, and tests of several packages (run in parallel by
// go test) would otherwise take each other's GPUs, preempt each other's jobs by QOS,
// or see slurmctld stopped by another test.
package slurmtest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Conf returns the slurm.conf of the test Slurm (GANTRY_TEST_SLURM_CONF) and holds
// the cluster for t until it ends. Without one it skips t, or fails it when
// GANTRY_REQUIRE_SLURM=1.
func Conf(t testing.TB) string {
	t.Helper()
	conf := os.Getenv("GANTRY_TEST_SLURM_CONF")
	if conf == "" {
		if os.Getenv("GANTRY_REQUIRE_SLURM") == "1" {
			t.Fatal("GANTRY_REQUIRE_SLURM=1 but GANTRY_TEST_SLURM_CONF is not set: start one with scripts/slurm.sh start DIR")
		}
		t.Skip("no Slurm: set GANTRY_TEST_SLURM_CONF to what scripts/slurm.sh start DIR prints")
	}
	f, err := os.OpenFile(filepath.Join(filepath.Dir(conf), "tests.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("lock the test Slurm: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("lock the test Slurm: %v", err)
	}
	t.Cleanup(func() { f.Close() }) // closing releases the lock
	return conf
}
