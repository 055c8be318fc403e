package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// fenceFile is the lease that keeps the node's jobs alive, inside the data dir.
const fenceFile = "lease"

// fenceDeadlines are when the shims stop their jobs unless the agent renews the lease.
type fenceDeadlines struct {
	term, kill time.Time
}

// fenceFor returns the deadlines after a heartbeat sent at `sent` was accepted (or
// met a server that is down), for a server that declares a node lost after
// timeout. The job gets SIGTERM at 5/8 of the timeout and SIGKILL at 6/8, so it is
// gone a quarter of the timeout before the server could run it elsewhere.
func fenceFor(sent time.Time, timeout time.Duration) fenceDeadlines {
	return fenceDeadlines{term: sent.Add(timeout * 5 / 8), kill: sent.Add(timeout * 6 / 8)}
}

func writeFence(dataDir string, d fenceDeadlines) error {
	line := fmt.Sprintf("%d %d\n", d.term.UnixMilli(), d.kill.UnixMilli())
	return writeFileAtomic(filepath.Join(dataDir, fenceFile), []byte(line), 0o644)
}

// readFence reads the lease; a missing or unreadable one has expired.
func readFence(path string) (fenceDeadlines, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return fenceDeadlines{}, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return fenceDeadlines{}, errors.New("lease file is damaged")
	}
	term, err1 := strconv.ParseInt(f[0], 10, 64)
	kill, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return fenceDeadlines{}, errors.New("lease file is damaged")
	}
	return fenceDeadlines{term: time.UnixMilli(term), kill: time.UnixMilli(kill)}, nil
}
