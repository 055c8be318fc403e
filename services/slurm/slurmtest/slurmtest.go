// Package slurmtest gives tests the throw-away Slurm of scripts/slurm.sh, one test at
// a time: the cluster has one node, and tests of several packages (run in parallel by
// go test) would otherwise take each other's GPUs, preempt each other's jobs by QOS,
// or see slurmctld stopped by another test.
package slurmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
	waitResponding(t, conf)
	return conf
}

// waitResponding waits until slurmctld answers and hears from every node: a test
// that restarted slurmctld hands the cluster on before slurmd registers again, and a
// node that does not respond (sinfo's idle*) is down to Gantry.
func waitResponding(t testing.TB, conf string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		cmd := exec.Command("sinfo", "-h", "-N", "-o", "%N %T")
		cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
		out, err := cmd.CombinedOutput()
		if err == nil && len(strings.TrimSpace(string(out))) > 0 && !strings.Contains(string(out), "*") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the test Slurm's nodes do not respond after a minute: %v: %s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
