package slurm

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ReadLog reads up to limit bytes of a job's log file from offset: what it wrote since
// the last read. A file that does not exist yet (the job has not started) reads as
// empty. Logs are appended across runs (--open-mode=append), so offsets only grow.
func ReadLog(path string, offset int64, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read log %s: %w", path, err)
	}
	defer f.Close()
	buf := make([]byte, limit)
	n, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read log %s at %d: %w", path, offset, err)
	}
	return buf[:n], nil
}
