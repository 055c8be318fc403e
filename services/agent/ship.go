package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/gantry-gpu/gantry/services/agentapi"
)

// shipChunk is the most one log request carries; shipBurst the most one call ships.
const (
	shipChunk = 64 << 10
	shipBurst = 1 << 20
)

// shipped is how much of each stream the server holds, or streamFull.
type shipped map[string]int64

// streamFull marks a stream the server keeps no more of (its log limit): nothing more
// of it is sent, and what the job writes to it is dropped on the node too, where a
// job that writes without end would fill the disk its neighbours share.
const streamFull = -1

// shipLogs sends what the attempt's output files hold beyond what was shipped, and
// reports whether it caught up with them. The shipped offsets are saved after
// every acknowledged chunk; the server drops what it already has, so a restart
// between the two only resends.
func (ag *Agent) shipLogs(ctx context.Context, ref agentapi.AttemptRef, f attemptFiles) (bool, error) {
	off := shipped{}
	if err := f.readJSON(shippedFile, &off); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read shipped offsets: %w", err)
	}
	caughtUp := true
	for _, stream := range []string{agentapi.StreamStdout, agentapi.StreamStderr} {
		done, err := ag.shipStream(ctx, ref, f, stream, off)
		if err != nil {
			return false, err
		}
		caughtUp = caughtUp && done
	}
	return caughtUp, nil
}

func (ag *Agent) shipStream(ctx context.Context, ref agentapi.AttemptRef, f attemptFiles, stream string, off shipped) (bool, error) {
	path := f.path(stream + ".log")
	if off[stream] == streamFull {
		return true, dropOutput(path)
	}
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer file.Close()
	buf := make([]byte, shipChunk)
	for sent := 0; sent < shipBurst; {
		n, err := file.ReadAt(buf, off[stream])
		if n == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				return true, nil
			}
			return false, fmt.Errorf("read %s: %w", stream, err)
		}
		ack, err := ag.client.logs(ctx, agentapi.LogChunk{AttemptRef: ref, Stream: stream, Offset: off[stream], Data: buf[:n]})
		if err != nil {
			return false, err
		}
		off[stream] = ack.NextOffset
		if ack.Full {
			off[stream] = streamFull
		}
		if err := f.writeJSON(shippedFile, off); err != nil {
			return false, err
		}
		if ack.Full {
			return true, dropOutput(path)
		}
		sent += n
	}
	return false, nil
}

// dropOutput empties an output file past the log limit. The job appends (O_APPEND),
// so it writes on at the new end.
func dropOutput(path string) error {
	if err := os.Truncate(path, 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("drop output past the log limit: %w", err)
	}
	return nil
}
