package main

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// The database blips: three times while a job runs, PostgreSQL cuts every connection
// `gantry serve` holds (its pool and its leader lock), each time once the server leads
// again. The server serves on and takes the lock back each time, the running job
// finishes in its one attempt with all its output, and jobs submitted at once after
// the last cut and later run.
func TestServeRidesOutDatabaseBlips(t *testing.T) {
	cfg := storetest.Backends()[1].Config(t)
	dir := t.TempDir()
	url, _ := serveFor(t, dir, "--database-url", cfg.DatabaseURL, "--heartbeat-interval", "300ms", "--node-timeout", "10s")
	a := api{t: t, url: url, token: apiTokenOn(t, "--database-url", cfg.DatabaseURL)}

	long := a.submit(`i=0; while [ $i -lt 60 ]; do echo "tick $i"; i=$((i+1)); sleep 0.05; done; echo finished`)
	a.wait(long.ID, "running")
	db, err := storetest.SQL(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// leads waits until the server holds its leader lock (a session-level advisory
	// lock) on a connection other than before's, and returns that connection's pid.
	leads := func(when string, before int) int {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var pid int
			err := db.QueryRow("SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()").Scan(&pid)
			if err == nil && pid != before {
				return pid
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s the server does not hold the leader lock on a new connection (pid %d, %v)", when, pid, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	holder := 0
	for i := range 3 {
		holder = leads("before blip "+strconv.Itoa(i+1), holder)
		// Every backend of the server's database but the one that asks: the leader
		// lock's among them.
		var cut int
		err := db.QueryRow("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()").Scan(&cut)
		if err != nil || cut == 0 {
			t.Fatalf("blip %d cut %d connections: %v", i+1, cut, err)
		}
	}
	// A write at once after the last cut, before the server leads again.
	early := a.submit(`echo early`)
	leads("after the blips", holder)
	got := a.wait(long.ID, "succeeded")
	if got.Attempt != 1 {
		t.Errorf("the job ran %d attempts across the blips, want 1", got.Attempt)
	}
	if logs := a.logs(long.ID); logs != ticks(60) {
		t.Errorf("logs after the blips = %q", logs)
	}
	if j := a.wait(early.ID, "succeeded"); j.Attempt != 1 {
		t.Errorf("the job submitted at once after the blips ran %d attempts", j.Attempt)
	}
	after := a.submit(`echo after`)
	if j := a.wait(after.ID, "succeeded"); j.Attempt != 1 {
		t.Errorf("the job submitted after the blips ran %d attempts", j.Attempt)
	}
	res, err := http.Get(url + "/readyz")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("readyz after the blips = %v, %v", res, err)
	}
	if err == nil {
		res.Body.Close()
	}
}
