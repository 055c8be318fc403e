// Package slurmtest gives tests the throw-away Slurms of scripts/slurm.sh, one test at
// a time on each: a cluster has one node, and tests of several packages (run in
// parallel by go test) would otherwise take each other's GPUs, preempt each other's
// jobs by QOS, or see slurmctld stopped by another test. With several clusters, as
// many tests run at once.
package slurmtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Conf returns the slurm.conf of a test Slurm (GANTRY_TEST_SLURM_CONF: one path, or
// several separated by the path list separator) and holds that cluster for t until it
// ends, waiting while every cluster is held. Without one it skips t, or fails it when
// GANTRY_REQUIRE_SLURM=1.
func Conf(t testing.TB) string {
	t.Helper()
	confs := filepath.SplitList(os.Getenv("GANTRY_TEST_SLURM_CONF"))
	if len(confs) == 0 {
		if os.Getenv("GANTRY_REQUIRE_SLURM") == "1" {
			t.Fatal("GANTRY_REQUIRE_SLURM=1 but GANTRY_TEST_SLURM_CONF is not set: start one with scripts/slurm.sh start DIR")
		}
		t.Skip("no Slurm: set GANTRY_TEST_SLURM_CONF to what scripts/slurm.sh start DIR prints")
	}
	var locks []*os.File
	t.Cleanup(func() { // closing releases the lock
		for _, f := range locks {
			f.Close()
		}
	})
	for _, conf := range confs {
		f, err := os.OpenFile(filepath.Join(filepath.Dir(conf), "tests.lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatalf("lock the test Slurm %s: %v", conf, err)
		}
		locks = append(locks, f)
	}
	i, err := hold(locks)
	if err != nil {
		t.Fatalf("hold a test Slurm: %v", err)
	}
	waitResponding(t, confs[i])
	return confs[i]
}

// hold takes the first of locks that nobody holds, trying them all again until one
// is free, and returns its index.
func hold(locks []*os.File) (int, error) {
	for {
		for i, f := range locks {
			err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err == nil {
				return i, nil
			}
			if !errors.Is(err, syscall.EWOULDBLOCK) {
				return 0, fmt.Errorf("lock %s: %w", f.Name(), err)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
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
