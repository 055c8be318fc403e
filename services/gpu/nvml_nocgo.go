//go:build !cgo

package gpu

import (
	"fmt"
	"time"
)

// OpenNVML reports ErrNoDriver: go-nvml needs cgo, and this binary was built
// without it. The agent then runs without GPUs, or with simulated ones.
func OpenNVML(now func() time.Time) (Source, error) {
	return nil, fmt.Errorf("%w: this binary was built without cgo, which NVML needs", ErrNoDriver)
}
