//go:build !cgo

package gpu

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestOpenNVMLWithoutCgo(t *testing.T) {
	src, err := OpenNVML(time.Now)
	if src != nil || !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "without cgo") {
		t.Fatalf("OpenNVML = %v, %v; want ErrNoDriver saying why", src, err)
	}
}
